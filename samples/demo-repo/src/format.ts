// Money formatting helpers (TypeScript): lint and formatting problems on purpose.
export interface Money { amount: number; currency: string }

var DEFAULT_CURRENCY: string = "EUR"

export function formatMoney(money: Money, locale = 'en-US'): string {
    let digits = 2
    const value = Math.pow(10, digits)
    let rounded = Math.round(money.amount * value) / value
    return new Intl.NumberFormat(locale, { style: "currency", currency: money.currency || DEFAULT_CURRENCY, minimumFractionDigits: digits }).format(rounded)
}

export function sum(values: number[]): number {
  let total = 0
  for (const v of values) { total = total + v }
  return total
}
