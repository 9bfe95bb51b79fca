package dev.licensor.sdk;

import java.util.Optional;

/**
 * What {@link LicenceClient#checkForUpdate} found (DESIGN.md 20).
 *
 * @param update the highest release above the current version that this licence may download, its manifest verified; empty for none
 * @param blocked a higher release this licence may not download; empty for none
 */
public record UpdateCheck(Optional<Update> update, Optional<Blocked> blocked) {
    /** A release the licence may not download: {@code reason} UPDATES_EXPIRED (after its update window) or NOT_ENTITLED (its requires not met). */
    public record Blocked(String version, String publishedAt, String reason) {}
}
