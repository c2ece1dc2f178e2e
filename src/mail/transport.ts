import type { MailAddress } from './addresses.ts';

/** One mail, fully rendered; addresses already checked (src/mail/addresses.ts). */
export interface OutgoingMail {
  from: MailAddress;
  to: string;
  subject: string;
  text: string;
  html: string;
  /** '<uuid@domain>', the same on every attempt. */
  messageId: string;
}

/** Where rendered mails go: SMTP, or .eml files when no SMTP server is configured. */
export interface MailTransport {
  /** Resolves once the mail is accepted; rejects (within the transport's time bounds) otherwise. */
  send(mail: OutgoingMail): Promise<void>;
  /** Releases connections; further sends fail. */
  close(): void;
}

/** nodemailer's message fields for a mail: headers are built by nodemailer, never by concatenation. */
export function toNodemailerMessage(mail: OutgoingMail) {
  return {
    from: { name: mail.from.name, address: mail.from.address },
    to: { name: '', address: mail.to },
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: mail.messageId,
    // Never read files or URLs named in a message: the content is ours, but say so anyway.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}
