/**
 * Without SMTP, mails become `<dir>/<timestamp>-<message id>.eml` files a developer can open:
 * 0600 in a 0700 directory (they hold sign-in links), written to a temporary name and renamed, so
 * a reader never sees half a file.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Clock } from '../../lib/clock.ts';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../store/private-files.ts';
import { toNodemailerMessage, type MailTransport } from '../transport.ts';

export interface EmlFileTransportOptions {
  /** `<LATCHKEY_DATA_DIR>/outbox`; created 0700 when missing. */
  dir: string;
  clock: Clock;
}

export function createEmlFileTransport({ dir, clock }: EmlFileTransportOptions): MailTransport {
  return {
    async send(mail) {
      const bytes = await new MailComposer(toNodemailerMessage(mail)).compile().build();
      makePrivateDir(dir);
      const stamp = new Date(clock.now()).toISOString().replace(/[:.]/g, '-');
      // The Message-ID's local part is a UUID: a safe file name, the same on a resend.
      const id = mail.messageId.replace(/^<|@.*$/g, '').replace(/[^A-Za-z0-9-]/g, '');
      const target = join(dir, `${stamp}-${id}.eml`);
      const temporary = join(dir, `.${id}-${randomBytes(6).toString('hex')}.tmp`);
      try {
        writeFileSync(temporary, bytes, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
        chmodSync(temporary, PRIVATE_FILE_MODE);
        renameSync(temporary, target);
      } catch (error) {
        rmSync(temporary, { force: true });
        throw error;
      }
    },
    close() {},
  };
}
