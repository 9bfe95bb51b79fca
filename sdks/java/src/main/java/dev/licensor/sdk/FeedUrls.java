package dev.licensor.sdk;

/**
 * The licence's feeds for the updaters (DESIGN.md 20): electron-updater's folder, Tauri v2's
 * endpoint (its {@code {{target}}}, {@code {{arch}}} and {@code {{current_version}}} literal),
 * Sparkle 2's appcast and the SDKs' latest.json. They are secrets: anyone holding one downloads
 * what the licence may.
 */
public record FeedUrls(String electron, String tauri, String sparkle, String json) {}
