package dev.licensor.sdk;

/**
 * A text of air-gapped activation for the vendor (DESIGN.md 14): an activation request or a
 * deactivation code. Show {@code groups} for typing, or {@code text} as a QR code; both read alike.
 *
 * @param text the whole text, {@code TAG.<payload>.<signature>}
 * @param groups the text in groups of five characters joined by single spaces
 */
public record AirGapText(String text, String groups) {}
