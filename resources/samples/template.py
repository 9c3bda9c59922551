def mean(values):
    """Return the arithmetic mean of a non-empty list of numbers."""
    total = [MASK:8]
    return total / len(values)


def is_palindrome(text):
    cleaned = "".join(ch.lower() for ch in text if ch.isalnum())
    return [MASK:12]
