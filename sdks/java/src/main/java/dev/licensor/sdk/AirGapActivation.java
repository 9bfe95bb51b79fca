package dev.licensor.sdk;

import java.time.Instant;

/**
 * An accepted air-gapped activation (DESIGN.md 14).
 *
 * @param until until when {@link LicenceClient#check()} is VALID on this machine without the network
 * @param activationId the service's id of the activation ({@code aid})
 */
public record AirGapActivation(Instant until, String activationId) {}
