const EVERY_MS = 60 * 60 * 1000;

/**
 * Work every process runs hourly and once at start, such as forgetting what is past its keeping
 * (a delete that finds nothing costs little); a failure is logged and the next hour tries again.
 */
export function hourly(work: () => Promise<unknown>, log: { warn(obj: unknown, msg: string): void }, failure: string) {
  let timer: NodeJS.Timeout | undefined;
  const run = () => work().catch((err: unknown) => log.warn({ err }, `${failure}; the next hour tries again`));
  return {
    start() {
      void run();
      timer = setInterval(() => void run(), EVERY_MS).unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
