module licensor.dev/licensor

go 1.19
