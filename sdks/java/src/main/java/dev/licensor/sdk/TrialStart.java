package dev.licensor.sdk;

import java.time.Instant;

/**
 * What {@link LicenceClient.Builder#startTrial(String)} answers.
 *
 * @param client a client holding the trial licence, for {@link LicenceClient#check()} and the rest
 * @param created true when this call started the trial; false when the service gave this machine back its own
 * @param licence the trial licence string: keep it like any licence
 * @param endsAt the trial's end (its {@code exp})
 * @param result the start's answer judged as {@link LicenceClient#check()} judges one
 */
public record TrialStart(LicenceClient client, boolean created, String licence, Instant endsAt, CheckResult result) {}
