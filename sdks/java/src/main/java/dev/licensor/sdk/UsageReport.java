package dev.licensor.sdk;

import java.util.List;
import java.util.Optional;

/**
 * What {@link LicenceClient#recordUsage} and {@link LicenceClient#usage()} answer (DESIGN.md 19).
 *
 * @param licensed licensed on this machine by the signed fields of this client's last verified usage answer; empty before one
 * @param reason why not licensed, as for a check; empty when licensed or without an answer
 * @param events this licence's queued events this call dealt with, oldest first
 * @param meters the last verified balances of every meter of the licence; empty before any
 * @param fresh true for this call's answer, false for an earlier one of this client; empty for none
 * @param pending how many events are queued here for other licences (never sent for this one)
 * @param noAnswer why this call got no verified answer
 * @param storeError set when a counted event's file could not be removed (it is sent again and answered as a duplicate)
 */
public record UsageReport(Optional<Boolean> licensed, Optional<CheckResult.Reason> reason, List<Event> events, Optional<List<Balance>> meters,
                          Optional<Boolean> fresh, int pending, Optional<NoAnswer> noAnswer, Optional<java.io.IOException> storeError) {

    /** An event's result while it waits on disk (no answer yet). */
    public static final String QUEUED = "QUEUED";

    /**
     * A queued event and what became of it: {@code ACCEPTED}, {@code LIMIT_REACHED}, {@code UNKNOWN_METER},
     * {@code TOO_OLD}, {@code EVENT_LIMIT}, {@code ID_REUSED} (final), {@code NOT_LICENSED} (kept, sent again) or {@link #QUEUED}.
     */
    public record Event(String id, String meter, long amount, String result) {}

    /**
     * A meter's balance as the last verified receipt signed it; {@code limit} empty is unlimited,
     * {@code overage} empty no ceiling, {@code remaining} empty without a ceiling, {@code resetsAt}
     * empty for a NONE period; {@code pending} the amount queued here and not counted yet.
     */
    public record Balance(String key, long used, Optional<Long> limit, Optional<Long> overage, Optional<Long> remaining, Optional<String> resetsAt, long pending) {}
}
