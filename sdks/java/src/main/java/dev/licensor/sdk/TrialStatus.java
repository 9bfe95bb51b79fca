package dev.licensor.sdk;

import java.time.Instant;

/**
 * A trial licence's end (DESIGN.md 18).
 *
 * @param endsAt the signed {@code exp}
 * @param secondsLeft whole seconds from the later of the service's time and the newest verified
 *     checkedAt to {@code endsAt}; 0 once ended
 * @param converted the last answer said the trial was converted to a paid licence (unsigned): ask the vendor for it
 */
public record TrialStatus(Instant endsAt, long secondsLeft, boolean converted) {}
