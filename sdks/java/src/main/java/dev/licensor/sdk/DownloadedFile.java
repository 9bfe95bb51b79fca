package dev.licensor.sdk;

import java.nio.file.Path;

/** A file {@link LicenceClient#download} kept: its path, size and SHA-256 (lowercase hex), the manifest's. */
public record DownloadedFile(Path path, long size, String sha256) {}
