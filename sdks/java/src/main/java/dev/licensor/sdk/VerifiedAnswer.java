package dev.licensor.sdk;

import java.time.Instant;
import java.util.Optional;

/**
 * A check answer whose receipt verified against this licence, the nonce sent and this machine.
 *
 * @param status the signed status (empty for an unknown licence)
 * @param checkedAt the service's signed time of the answer
 * @param boundAt when this machine's seat was bound; empty when it holds none
 * @param leaseEndsAt a floating licence's signed lease end; empty otherwise
 * @param grants licensed on this machine by the signed fields: status ACTIVE or GRACE and a seat bound
 * @param renewed the answer's unsigned hint that a newer term exists
 * @param fresh true for this call's answer, false for the remembered one
 * @param offsetMs the service's clock minus this machine's when the answer arrived (0 when unknown)
 */
public record VerifiedAnswer(String status, Instant checkedAt, Optional<Instant> boundAt, Optional<Instant> leaseEndsAt,
                             boolean grants, boolean renewed, boolean fresh, long offsetMs) {}
