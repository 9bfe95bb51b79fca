package dev.licensor.sdk;

import java.util.Optional;

/**
 * What {@link LicenceClient#release()} achieved.
 *
 * @param released true when this machine's seat was freed
 * @param releasedAt when, as the service says (present when released)
 * @param reason why nothing was freed: {@code NO_SEAT} (this machine holds none), {@code AT_ISSUE}
 *     (the seat is in the licence's signature), {@code UNKNOWN_LICENCE} or, for a floating
 *     licence, {@code BORROWED}
 */
public record ReleaseResult(boolean released, Optional<String> releasedAt, Optional<String> reason) {}
