package dev.licensor.sdk;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Keeps a floating licence's lease (DESIGN.md 13): checks every max({@code lse} / 3, 60 s) with
 * ±10% jitter, retries a failed renewal at once, reports a lease at risk (a renewal failed while
 * the lease still runs) before it is lost and a lost lease when it is, fetches the new term when
 * an answer says {@code renewed}, and releases the lease on {@link #stop()} and when the JVM shuts
 * down (SIGINT, SIGTERM), never a borrowed one. The lease length is the longest outage of the
 * service a floating site survives.
 *
 * <pre>{@code
 * LeaseKeeper keeper = LeaseKeeper.start(client, new LeaseKeeper.Listener() {
 *     public void leaseLost(CheckResult result) { disableFeatures(); }
 * });
 * ...
 * keeper.stop();
 * }</pre>
 */
public final class LeaseKeeper implements AutoCloseable {
    private static final Duration MIN_INTERVAL = Duration.ofSeconds(60);

    /** What the keeper reports; every method has an empty default. Called on the keeper's thread. */
    public interface Listener {
        /** Every check's result, the retry's included. */
        default void checked(CheckResult result) {}

        /** A renewal got no answer while the lease still runs: it ends at {@code leaseEndsAt} unless a later one succeeds. */
        default void leaseAtRisk(CheckResult result, Instant leaseEndsAt) {}

        /** The lease is no longer held (lapsed, or the service said not licensed). */
        default void leaseLost(CheckResult result) {}

        /** The service issued a newer term, fetched and verified: store it for the next start. */
        default void renewedTerm(String licence) {}

        /** fetch() or release() failed. */
        default void failed(LicensorException error) {}
    }

    private final LicenceClient client;
    private final Listener listener;
    private final Duration interval;
    private final ScheduledExecutorService timer;
    private final Thread shutdownHook;
    private boolean held;
    private boolean borrowed;
    private boolean stopped;

    LeaseKeeper(LicenceClient client, Listener listener, Duration interval, boolean schedule) {
        this.client = client;
        this.listener = listener;
        this.interval = interval;
        this.timer = schedule ? Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "licensor-lease");
            thread.setDaemon(true);
            return thread;
        }) : null;
        this.shutdownHook = new Thread(this::releaseLease, "licensor-lease-release");
    }

    /**
     * Starts keeping the lease of {@code client}'s floating licence: the first check runs at once.
     *
     * @throws LicensorException {@code INVALID_OPTIONS} when the licence is not a verified floating one
     */
    public static LeaseKeeper start(LicenceClient client, Listener listener) throws LicensorException {
        LicenceClaims claims = client.verify().claims().filter(c -> c.version() == 5).orElseThrow(() ->
            new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "a lease keeper needs a floating licence (v 5) that verifies"));
        Duration interval = Duration.ofSeconds(Math.max(claims.leaseSeconds().getAsLong() / 3, MIN_INTERVAL.getSeconds()));
        LeaseKeeper keeper = new LeaseKeeper(client, listener, interval, true);
        Runtime.getRuntime().addShutdownHook(keeper.shutdownHook);
        keeper.timer.execute(keeper::run);
        return keeper;
    }

    private void run() {
        long delay = tick();
        synchronized (this) {
            if (!stopped) timer.schedule(this::run, delay, TimeUnit.MILLISECONDS);
        }
    }

    /** One round: check (and retry once on no answer), report, fetch a renewed term; answers the delay to the next round. */
    synchronized long tick() {
        if (stopped) return 0;
        CheckResult result = client.check();
        listener.checked(result);
        if (result.noAnswer().isPresent()) {
            result = client.check();
            listener.checked(result);
        }
        boolean valid = result.state() == CheckState.VALID;
        if (valid && result.noAnswer().isPresent()) listener.leaseAtRisk(result, result.leaseEndsAt().orElseThrow());
        if (held && !valid) listener.leaseLost(result);
        held = valid;
        borrowed = valid && result.answer().isPresent() && isBorrow(result);
        if (result.renewed()) {
            try {
                listener.renewedTerm(client.fetch());
            } catch (LicensorException failed) {
                listener.failed(failed);
            }
        }
        long next = jittered(interval.toMillis());
        // Wake up when a lease at risk would lapse, so that its loss is reported when it happens.
        if (valid && result.noAnswer().isPresent()) next = Math.min(next, Math.max(1_000, client.untilLeaseLapses(result.answer().orElseThrow())));
        return next;
    }

    /** A lease end beyond one lease length after its answer is a borrow: only an operator frees it early. */
    private boolean isBorrow(CheckResult result) {
        long lse = result.licence().claims().map(c -> c.leaseSeconds().orElse(0)).orElse(0L);
        Instant checkedAt = result.answer().orElseThrow().checkedAt();
        return result.leaseEndsAt().map(end -> end.isAfter(checkedAt.plusSeconds(lse))).orElse(false);
    }

    private static long jittered(long millis) {
        return Math.round(millis * (0.9 + 0.2 * ThreadLocalRandom.current().nextDouble()));
    }

    /** Stops checking and releases the lease (unless it is borrowed), so another machine can take the seat at once. */
    public void stop() {
        synchronized (this) {
            if (stopped) return;
            stopped = true;
        }
        if (timer != null) timer.shutdownNow();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running (or ran) already
        }
        releaseLease();
    }

    @Override
    public void close() {
        stop();
    }

    private synchronized void releaseLease() {
        if (!held || borrowed) return;
        held = false;
        try {
            client.release();
        } catch (LicensorException failed) {
            listener.failed(failed);
        }
    }
}
