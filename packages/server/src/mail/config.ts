import { MAIL_DISABLED, type MailConfig } from '../config.js';

let current: MailConfig = MAIL_DISABLED;

/** The app (app.ts) states the deployment's mail configuration once; queueing and sending read it. */
export function useMailConfig(config: MailConfig): void {
  current = config;
}

export const mailConfig = (): MailConfig => current;
export const mailConfigured = (config: MailConfig = current): boolean => config.smtp !== null && config.from !== null;
