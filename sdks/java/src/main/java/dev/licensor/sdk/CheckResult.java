package dev.licensor.sdk;

import java.io.IOException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * The outcome of one {@link LicenceClient#check()}. Immutable.
 *
 * @param state VALID, STALE or INVALID
 * @param reasons why INVALID; empty otherwise
 * @param licence the offline verification of the licence at this moment
 * @param answer the verified answer the state rests on: this call's, else the remembered one, else none
 * @param noAnswer why this call got no verified answer; empty when it got one or sent nothing (offline refusal)
 * @param ageSeconds seconds since the answer's signed checkedAt, in the service's time as this machine reads it
 * @param clockRollback the local clock is earlier than the last verified checkedAt: the answer's age cannot be trusted
 * @param renewed this call's answer says a newer term exists: call {@link LicenceClient#fetch()}
 * @param serverReason the service's unsigned {@code reason}, for display only
 * @param storeError the verified answer could not be kept (the result still holds)
 * @param leaseEndsAt a floating licence's signed lease end the state rests on
 * @param airGapped VALID rests on an air-gapped activation of this machine (DESIGN.md 14), not on a check answer
 * @param trial for a trial licence ({@code trl}), its end as the service's clock judges it; empty for any other
 */
public record CheckResult(CheckState state, List<Reason> reasons, LicenceVerification licence, Optional<VerifiedAnswer> answer,
                          Optional<NoAnswer> noAnswer, OptionalDouble ageSeconds, boolean clockRollback, boolean renewed,
                          Optional<String> serverReason, Optional<IOException> storeError, Optional<Instant> leaseEndsAt,
                          boolean airGapped, Optional<TrialStatus> trial) {
    /** Why a check is INVALID: an offline refusal, or what the signed status and boundAt say. */
    public enum Reason {
        MALFORMED, BAD_SIGNATURE, WRONG_PRODUCT, NOT_YET_VALID, EXPIRED, FINGERPRINT_MISMATCH,
        /** The licence's term is older ({@code iat}) than one this machine has already seen. */
        OLDER_TERM,
        REVOKED, UNKNOWN_LICENCE,
        /** The licence is ACTIVE or GRACE, but another machine holds the seat(s). */
        NO_SEAT,
        NOT_LICENSED
    }

    public CheckResult {
        reasons = List.copyOf(reasons);
    }

    /** True for this call's answer, false for a remembered one, empty when there is none. */
    public Optional<Boolean> fresh() {
        return answer.map(VerifiedAnswer::fresh);
    }
}
