package dev.licensor.sdk;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

/** Reading the {@code .lic} file a vendor sends. */
public final class LicenceFile {
    private static final Pattern AROUND = Pattern.compile("^\uFEFF?[ \t\r\n\f\u000B]+|^\uFEFF|[ \t\r\n\f\u000B]+$");

    private LicenceFile() {}

    /**
     * The licence string in a {@code .lic} file, without what an editor or a download puts around
     * it: a byte-order mark and surrounding spaces, tabs and line breaks. {@link LicenceVerifier#verify}
     * itself stays strict (a string with a trailing newline is MALFORMED), so read files through this.
     */
    public static String read(Path file) throws IOException {
        return AROUND.matcher(Files.readString(file, StandardCharsets.UTF_8)).replaceAll("");
    }
}
