module licensor.dev/example

go 1.19

require licensor.dev/licensor v0.0.0

replace licensor.dev/licensor => ../../sdks/go
