"""A small inventory ledger for a workshop: parts, stock levels and orders."""
from dataclasses import dataclass, field
from datetime import date


@dataclass
class Part:
    code: str
    name: str
    unit_cost: float
    stock: int = 0
    reorder_level: int = 5


@dataclass
class Order:
    number: int
    part_code: str
    quantity: int
    placed: date
    received: bool = False


@dataclass
class Ledger:
    parts: dict = field(default_factory=dict)
    orders: list = field(default_factory=list)
    next_order: int = 1

    def add_part(self, part):
        if part.code in self.parts:
            raise ValueError(f"part {part.code} already exists")
        self.parts[part.code] = part

    def find_part(self, code):
        part = self.parts.get(code)
        if part is None:
            raise KeyError(f"no part {code}")
        return part

    def take_stock(self, code, quantity):
        part = self.find_part(code)
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if part.stock < quantity:
            raise ValueError(f"only {part.stock} of {code} left")
        part.stock -= quantity
        return part.stock

    def restock_item(self, code, quantity):
        part = self.find_part(code)
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        part.stock += quantity
        return part.stock

    def place_order(self, code, quantity, today):
        self.find_part(code)
        order = Order(self.next_order, code, quantity, today)
        self.orders.append(order)
        self.next_order += 1
        return order

    def receive_order(self, number):
        for order in self.orders:
            if order.number == number:
                if order.received:
                    raise ValueError(f"order {number} was already received")
                order.received = True
                return self.restock_item(order.part_code, order.quantity)
        raise KeyError(f"no order {number}")

    def open_orders(self):
        return [order for order in self.orders if not order.received]

    def below_reorder_level(self):
        return [part for part in self.parts.values() if part.stock <= part.reorder_level]

    def reorder_all(self, today, batch=10):
        placed = []
        pending = {order.part_code for order in self.open_orders()}
        for part in self.below_reorder_level():
            if part.code in pending:
                continue
            placed.append(self.place_order(part.code, batch, today))
        return placed

    def stock_value(self):
        return sum(part.stock * part.unit_cost for part in self.parts.values())

    def report(self):
        lines = []
        for code in sorted(self.parts):
            part = self.parts[code]
            flag = " (reorder)" if part.stock <= part.reorder_level else ""
            lines.append(f"{code:<8} {part.name:<24} {part.stock:>5}{flag}")
        lines.append(f"total value: {self.stock_value():.2f}")
        return "\n".join(lines)


def parse_line(line):
    fields = [value.strip() for value in line.split(",")]
    if len(fields) != 4:
        raise ValueError(f"expected 4 fields, got {len(fields)}")
    code, name, cost, stock = fields
    return Part(code, name, float(cost), int(stock))


def load_ledger(text):
    ledger = Ledger()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            ledger.add_part(parse_line(line))
        except ValueError as error:
            raise ValueError(f"line {number}: {error}") from error
    return ledger


def monthly_usage(orders, month):
    usage = {}
    for order in orders:
        if order.placed.month != month or not order.received:
            continue
        usage[order.part_code] = usage.get(order.part_code, 0) + order.quantity
    return usage


def busiest_part(orders):
    counts = {}
    for order in orders:
        counts[order.part_code] = counts.get(order.part_code, 0) + 1
    if not counts:
        return None
    return max(counts, key=counts.get)


SAMPLE = """# code, name, unit cost, stock
B-100, brass hinge, 1.20, 40
S-210, steel bracket, 0.85, 3
W-330, oak dowel, 0.30, 120
G-415, wood glue bottle, 4.50, 2
"""


if __name__ == "__main__":
    ledger = load_ledger(SAMPLE)
    ledger.take_stock("B-100", 12)
    ledger.reorder_all(date.today())
    print(ledger.report())
