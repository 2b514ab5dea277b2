// A shopping cart. It works, but it has lint and formatting problems for the demo agents to fix.
var TAX_RATE = 0.2

function lineTotal(item){
    let price = item['price']
    let quantity = item["quantity"]
    if (typeof price == "string") {
        price = Number(price)
    }
    return price*quantity
}

function cartTotal(items, coupon) {
  var total = 0
  for (let i = 0; i < items.length; i++) { total = total + lineTotal(items[i]) }
  if (!!coupon) {
    return { total: total, discounted: true, amount: total * (1 - coupon.rate) }
  } else {
    return { total: total, discounted: false, amount: total }
  }
}

function withTax(amount) {
  let rate = TAX_RATE
  return amount + amount*rate
}

const items = [{price: 10, quantity: 2}, {price: "5.5", quantity: 4}]
console.log(withTax(cartTotal(items, null).amount))

module.exports = { lineTotal: lineTotal, cartTotal: cartTotal, withTax: withTax }
