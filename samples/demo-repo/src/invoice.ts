// Invoices for services (TypeScript). It has its own lineTotal, like the cart: renaming "lineTotal"
// is ambiguous, so the refactoring agent asks which one is meant.
import { formatMoney, sum } from './format';
import type { Money } from './format';

export interface InvoiceLine {
  hours: number;
  rate: number;
}

/** What one line of an invoice comes to. */
export function lineTotal(line: InvoiceLine): number {
  return line.hours * line.rate;
}

export function invoiceTotal(lines: InvoiceLine[], currency: string): string {
  const amount = lines.reduce((total, line) => total + lineTotal(line), 0);
  const money: Money = { amount, currency };
  return formatMoney(money);
}
