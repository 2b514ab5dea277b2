// Pricing rules. Two functions need formatting; the rest already follows the project style.
function discountFor(customer){
    return customer.loyal ? 0.1 : 0
}

/**
 * Rounds an amount to cents.
 * @param {number} amount
 * @returns {number}
 */
function toCents(amount) {
  return Math.round(amount * 100) / 100;
}

/**
 * The price a customer pays for an amount.
 * @param {{ loyal: boolean }} customer
 * @param {number} amount
 * @returns {number}
 */
function priceFor(customer, amount) {
  return toCents(amount * (1 - discountFor(customer)));
}

function describePrice( customer,amount ) {
  return "Price: " + priceFor(customer, amount)
}

module.exports = { discountFor, toCents, priceFor, describePrice };
