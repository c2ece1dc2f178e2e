/** The customer a command works on, named by --customer-key (required). */
import type { Composition } from '../../compose/index.ts';
import { NotFound } from '../../lib/errors.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';

/** @throws UsageError when --customer-key is missing or not numeric; NotFound when no customer has it. */
export async function customerIdOf(args: ParsedArgs, app: Composition): Promise<number> {
  const key = stringFlag(args, 'customer-key', true);
  if (!/^[0-9]{1,20}$/.test(key)) throw new UsageError('--customer-key must be the numeric customer key');
  const customer = await app.services.customers.findByKey(key);
  if (!customer) throw new NotFound('customer', `No customer has the key ${key}.`);
  return customer.id;
}
