#!/bin/sh
# Builds the Java SDK with javac alone (no download) into build/ (git-ignored):
#   ./build.sh          the library build/licensor-sdk-<version>.jar, its sources beside it
#                       (licensor-sdk-<version>-sources.jar) and its POM (licensor-sdk-<version>.pom,
#                       a copy of pom.xml, which names the version), and apart from them the driver's classes
#   ./build.sh test     the above, then the JUnit 5 suite (Debian's junit5 console launcher)
# It rebuilds only when a source is newer than the last build, under a lock, so the driver and
# the test suite can start at the same time.
set -eu
cd "$(dirname "$0")"
JUNIT=${JUNIT_JAR:-/usr/share/java/junit-platform-console-standalone.jar}
VERSION=$(sed -n 's|^  <version>\(.*\)</version>$|\1|p' pom.xml)
NAME="licensor-sdk-$VERSION"
mkdir -p build

build() {
  if [ -f build/.built ] && [ -z "$(find src/main src/driver pom.xml -newer build/.built | head -1)" ]; then
    return
  fi
  rm -rf build/classes build/driver build/meta build/.built build/licensor-sdk-*
  mkdir -p build/classes build/driver build/meta/META-INF/maven/dev.licensor/licensor-sdk
  javac -Xlint:all -Werror --release 17 -d build/classes $(find src/main/java -name '*.java')
  # As Maven lays a jar out: the POM inside, a module name for the module path, the version.
  cp pom.xml build/meta/META-INF/maven/dev.licensor/licensor-sdk/pom.xml
  printf 'Automatic-Module-Name: dev.licensor.sdk\nImplementation-Title: Licensor Java SDK\nImplementation-Version: %s\n' "$VERSION" > build/meta/MANIFEST.txt
  jar --create --file "build/$NAME.jar" --manifest build/meta/MANIFEST.txt -C build/classes . -C build/meta META-INF
  jar --create --file "build/$NAME-sources.jar" -C src/main/java . -C build/meta META-INF
  cp pom.xml "build/$NAME.pom"
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
