#!/bin/sh
# Builds the Java SDK with javac alone (no download) into build/ (git-ignored):
#   ./build.sh          the library jar build/licensor-sdk.jar and, apart from it, the driver's classes
#   ./build.sh test     the above, then the JUnit 5 suite (Debian's junit5 console launcher)
# It rebuilds only when a source is newer than the last build, under a lock, so the driver and
# the test suite can start at the same time.
set -eu
cd "$(dirname "$0")"
JUNIT=${JUNIT_JAR:-/usr/share/java/junit-platform-console-standalone.jar}
mkdir -p build

build() {
  if [ -f build/.built ] && [ -z "$(find src/main src/driver -name '*.java' -newer build/.built | head -1)" ]; then
    return
  fi
  rm -rf build/classes build/driver build/.built
  mkdir -p build/classes build/driver
  javac -Xlint:all -Werror --release 17 -d build/classes $(find src/main/java -name '*.java')
  jar --create --file build/licensor-sdk.jar -C build/classes .
  # The driver is a test program: compiled apart, never inside the library jar.
  javac -Xlint:all -Werror --release 17 -cp build/classes -d build/driver $(find src/driver/java -name '*.java')
  touch build/.built
}

if command -v flock >/dev/null 2>&1; then
  exec 9>build/.lock
  flock 9
  build
  flock -u 9
else
  build
fi

if [ "${1:-}" = test ]; then
  rm -rf build/test && mkdir -p build/test
  javac -Xlint:all --release 17 -cp "build/classes:$JUNIT" -d build/test $(find src/test/java -name '*.java')
  exec java -Dlicensor.vectors="$(cd ../.. && pwd)/packages/protocol/test-vectors/vectors.json" \
    -jar "$JUNIT" --class-path "build/classes:build/test" --scan-class-path build/test --disable-banner --details=summary --fail-if-no-tests
fi
