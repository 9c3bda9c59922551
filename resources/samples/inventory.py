"""A small inventory: the sample document Sfumato opens for screenshots and first tries."""

from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 0

    def total(self) -> float:
        """The value of this line of stock."""
        return self.price * self.quantity


def restock(items: list[Item], threshold: int = 5) -> list[Item]:
    """Return the items that are running low, most urgent first."""
    low = [item for item in items if item.quantity < threshold]
    low.sort(key=lambda item: item.quantity)
    return low


def report(items: list[Item]) -> str:
    lines = [f"{item.name:<12} {item.quantity:>4} x {item.price:>7.2f}" for item in items]
    value = sum(item.total() for item in items)
    lines.append(f"{'total':<12} {value:>20.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    stock = [Item("apples", 0.5, 40), Item("pears", 0.75, 3), Item("figs", 2.0, 1)]
    print(report(stock))
    print("restock:", ", ".join(item.name for item in restock(stock)))
