"""An inventory module for `make demo`: it completes line 26, column 13 (the empty loop body)."""

from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: float
    quantity: int


class Inventory:
    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def add(self, item: Item) -> None:
        self.items[item.name] = item

    def remove(self, name: str) -> None:
        del self.items[name]

    def total_value(self) -> float:
        total = 0.0
        for item in self.items.values():
            
        return total
