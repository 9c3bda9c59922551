"""A heavy rewrite's plan: which lines are written again, and what stays exactly as it was."""

from __future__ import annotations

from sfumato.model.line_rewrite import (
    chosen_lines,
    ends_block,
    fits_its_place,
    line_means,
    reads_its_own_target,
    rewrite_plan,
    selection_lines,
    standalone_lines,
    unreachable_cut,
)

TEXT = "a = 1\n    b = 2\n\n    c = 3\n    d = 4"


def test_the_lines_join_back_to_the_selection():
    lines = selection_lines(TEXT)
    assert [line for line, _ in lines] == ["a = 1", "b = 2", "c = 3", "d = 4"]
    assert "".join(line + brk for line, brk in lines) == TEXT


def test_a_token_counts_for_the_line_its_last_byte_is_in():
    lines = selection_lines("ab\n  cd")
    # tokens after a healed "\n": "\n" (the heal), "ab", "\n  c", "d"
    means = line_means(lines, [1, 2, 4, 1], [-9.0, -1.0, -3.0, -5.0], heal=1)
    assert means == [-1.0, -4.0]  # the heal counts for no line; "\n  c" for the second


def test_the_least_likely_lines_are_chosen_and_the_rest_is_kept_as_it_was():
    lines = selection_lines(TEXT)
    chosen = chosen_lines(lines, lambda: [-0.5, -4.0, -0.1, -3.0], 0.5)
    assert chosen == [1, 3]
    lead, plan = rewrite_plan(lines, chosen)
    assert lead == "a = 1\n    " and [line for line, _ in plan] == ["b = 2", "d = 4"]
    assert lead + "".join(line + after for line, after in plan) == TEXT
    assert chosen_lines(lines, lambda: [0.0] * 4, 0.01) == [0]  # at least one line
    assert chosen_lines(selection_lines("\n\n"), lambda: [0.0], 1.0) == []  # none has text


def test_the_selection_is_read_only_when_some_of_its_lines_are_kept():
    """Choosing among the lines costs a forward pass over the prompt and the selection: at strength
    1 every line is written again, and a single line always is, so nothing is read."""
    def unread() -> list[float]:
        raise AssertionError("the selection was read")

    assert chosen_lines(selection_lines(TEXT), unread, 1.0) == [0, 1, 2, 3]
    assert chosen_lines(selection_lines("total = 0"), unread, 0.5) == [0]
    assert chosen_lines(selection_lines(TEXT), lambda: [-0.5, -4.0, -0.1, -3.0], 0.75) == [0, 1, 3]


def test_a_line_of_a_longer_statement_is_not_written_again_alone():
    text = 'from os import (path,\n    sep)\nname = "a (b"  # (c\nvalues = [1,\n    2]\ntotal = f(\'\\\'(\')'
    lines = selection_lines(text)
    assert [line for line, _ in lines][:2] == ["from os import (path,", "sep)"]
    # brackets inside quotes and comments do not count; an escaped quote does not end its string
    assert standalone_lines(lines) == [False, False, True, False, False, True]
    assert chosen_lines(lines, lambda: [-9.0, -8.0, -1.0, -7.0, -6.0, -2.0], 0.3) == [2, 5]
    assert chosen_lines(selection_lines("f(a,\n  b)"), lambda: [-1.0, -2.0], 0.5) == [1]  # none stands alone: any line


def test_a_written_line_fits_where_it_keeps_the_structure_of_the_line_it_replaces():
    body = ("def low_stock(items, limit):\n    ", "\n    for item in items:\n        found.append(item)\n")
    assert fits_its_place("found = list()", "found = []", *body)
    assert not fits_its_place("if limit == 0:", "found = []", *body)  # a block opened above a line as deep
    assert not fits_its_place("found = sorted(items,", "found = []", *body)  # a bracket left open
    assert not fits_its_place('"""', "found = []", *body)  # the lines below would sit in a string
    assert not fits_its_place("found = limit and", "found = []", *body)  # a statement going on
    assert not fits_its_place("# found = []", "found = []", *body)  # the code gone into a comment
    assert fits_its_place("# Items under the limit", "# Collect the items", *body)
    assert not fits_its_place("found = None", "# Collect the items", *body)  # a comment written as code
    header = ("# Checks, in no particular order:\n#\n", "\n#   Jeff Bauer, Cliff Crawford\nfrom __future__ import annotations\n")
    assert fits_its_place("#   Guido van Rossum, Tim Peters", "#   Charles Waldman, David Arnold", *header)
    assert not fits_its_place("#   Jeff Bauer, Cliff Crawford", "#   Charles Waldman, David Arnold", *header)  # the line below
    assert not fits_its_place("#", "#   Charles Waldman, David Arnold", *header)  # the line above
    assert fits_its_place("#", "#", *header)  # a copy where the original was one
    assert not fits_its_place("// Jeff Bauer, Guido", "#   Charles Waldman, David Arnold", *header)  # another marker
    methods = ("class Metrics:\n    ", "\n        return [self.operators, self.time]\n")
    assert fits_its_place("def tocsv(self) -> list:", "def tocsv(self) -> list[float]:", *methods)
    assert not fits_its_place("def __eq__(self, other) -> bool:", "def tocsv(self) -> list[float]:", *methods)  # renamed
    assert not fits_its_place("if", "self.add(x)", *methods)  # a keyword that needs more
    assert not fits_its_place("return f(f)", "@functools.wraps(f)", *methods)  # a decorator gone
    assert not fits_its_place("@property", "x = 1", *methods)  # and one made
    assert fits_its_place("@functools.cache", "@functools.wraps(f)", *methods)
    guarded = ("def clean():\n    ", "\n        yield registry\n    finally:\n        registry = old\n")
    assert not fits_its_place("if registry is None:", "try:", *guarded)  # its finally: left without it
    assert fits_its_place("for item in sorted(items):", "for item in items:", "    ", "\n        total += item\n")
    loop = ("def low_stock(items, limit):\n    found = []\n    ", "\n        found.append(item)\n    return found\n")
    assert fits_its_place("for item in sorted(items):", "for item in items:", *loop)
    assert not fits_its_place("found = items", "for item in items:", *loop)  # the deeper lines left without a head
    assert fits_its_place("return [item for item in items]", "for item in items:", *loop)  # they go (unreachable)


def test_a_written_line_leaves_its_block_only_where_no_line_of_it_follows_the_selection():
    loop = ("def low_stock(items, limit):\n    found = []\n    ", "\n        found.append(item)\n    return found\n")
    whole_rest = len(loop[1]) - 1  # the selection runs to the block's end
    assert fits_its_place("return [item for item in items]", "for item in items:", *loop, selection_rest=whole_rest)
    body_only = len("\n        found.append(item)")  # ``return found`` is not selected: it would never run
    assert not fits_its_place("return [item for item in items]", "for item in items:", *loop, selection_rest=body_only)
    sample = ("def restock(items, threshold):\n    ", "\n    low.sort(key=lambda item: item.quantity)\n    return low\n")
    assert not fits_its_place("return [item for item in items if item.price >= threshold]",
                              "low = [item for item in items if item.quantity < threshold]", *sample, selection_rest=0)
    nested = ("def f(x):\n    if x:\n        ", "\n    return 0\n")  # the line after it is the outer block's
    assert fits_its_place("return 1", "y = 1", *nested, selection_rest=0)
    assert fits_its_place("return low", "return found", *sample, selection_rest=0)  # it left the block already


def test_a_written_line_binds_the_names_the_lines_below_it_read():
    below = ("def expensive(cart, limit):\n    ", "\n    return sorted(found, key=lambda item: item.price)\n")
    assert not fits_its_place('"""Return the dear items."""', "found = [i for i in cart if i.price > limit]", *below)
    assert not fits_its_place("items = list(cart)", "found = [i for i in cart if i.price > limit]", *below)
    assert fits_its_place("found = list(cart)", "found = [i for i in cart if i.price > limit]", *below)
    assert fits_its_place("total = 0", "count = 0", *below)  # a name nothing below reads may go
    body = ("class Shop:\n    ", "\n        return [i for i in cart if i.price > limit]\n\nx = 1\n")
    assert not fits_its_place("def expensive(self, cart):", "def expensive(self, cart, limit):", *body)
    assert fits_its_place("def expensive(self, cart, limit=0):", "def expensive(self, cart, limit):", *body)
    typed = ("class Shop:\n    ", "\n        return int(limit)\n")  # ``int`` inside ``Dict[str, int]`` is no parameter
    assert fits_its_place("def cap(self, limit: float):", "def cap(self, limit: Dict[str, int] = f(a, b)):", *typed)
    loop = ("    ", "\n        total += price * count\n    return total\n")
    assert not fits_its_place("for price in prices:", "for price, count in rows:", *loop)
    assert fits_its_place("for price, count in zip(prices, counts):", "for price, count in rows:", *loop)
    assert fits_its_place("import os, sys", "import sys, os", "", "\nprint(sys.argv, os.sep)\n")
    assert not fits_its_place("import os", "import sys, os", "", "\nprint(sys.argv, os.sep)\n")


def test_a_written_line_does_not_call_its_own_function_with_its_own_parameters():
    body = ("def doubled(items):\n    ", "\n    for item in items:\n        result.append(item * 2)\n")
    assert not fits_its_place("return doubled(items)", "result = []", *body)  # it would never return
    assert fits_its_place("return doubled(items[1:])", "result = []", *body)  # a smaller problem may
    method = ("class Tree:\n    def walk(self, node, *args):\n        if node:\n            ", "\n")
    assert not fits_its_place("self.walk(node, *args)", "self.visit(node)", *method)
    assert fits_its_place("self.walk(node.left, *args)", "self.visit(node)", *method)
    assert fits_its_place("return doubled(items)", "return doubled(items)", *body)  # the original was one
    assert fits_its_place("total = doubled(items)", "count = 0", "items = [1]\n", "\nprint(total)\n")  # no definition


def test_a_line_that_leaves_its_block_is_an_indented_unconditional_return_raise_or_throw():
    assert ends_block("    return [x * 2 for x in items]")
    assert ends_block("\t\traise ValueError('bad')") and ends_block("  throw new Error(\"no\");")
    assert ends_block("        return a if b else c")  # Python's conditional expression still returns
    assert not ends_block("return 1")  # not indented: prose, or no block to leave
    assert not ends_block("    return (a +")  # the statement goes on
    assert ends_block("    return [x for x in xs if x]")  # a comprehension's if is no condition on it
    assert not ends_block("    return if done") and not ends_block("    raise Error unless ok")  # Ruby
    assert not ends_block("    returned = 3") and not ends_block("    # return here")


BODY = "result = []\n    for item in items:\n        result.append(item * 2)\n\n    return result\n\n\nprint(1)\n"


def test_the_lines_a_written_return_makes_unreachable_are_dropped_and_not_written():
    lines = selection_lines(BODY)
    lead, plan = rewrite_plan(lines, [0, 2])  # "result = []" and "result.append(...)" chosen
    written = "def doubled(items):\n    return [item * 2 for item in items]"
    cut = unreachable_cut(plan, 0, [written])
    assert cut == [("result = []", "\n\n\nprint(1)\n")]  # the loop, its chosen line and the old return go
    assert unreachable_cut(plan, 0, ["def doubled(items):\n    total = 0"]) is None


def test_a_line_indented_less_ends_what_is_unreachable():
    text = "if a:\n        return 1\n        b = 2\n\n    else:\n        c = 3"
    lines = selection_lines(text)
    lead, plan = rewrite_plan(lines, [1, 4])
    cut = unreachable_cut(plan, 0, ["    if a:\n        return 2"])
    assert cut == [("return 1", "\n\n    else:\n        "), ("c = 3", "")]  # the else branch is still written
    assert lead + "".join(line + after for line, after in cut) == "if a:\n        return 1\n\n    else:\n        c = 3"
    # every alternative must leave the block
    assert unreachable_cut(plan, 0, ["    if a:\n        return 2", "    if a:\n        x = 2"]) is None


def test_a_written_text_that_reads_the_name_its_statement_assigns_first():
    js = "const numbers = [1, 2, 3];\nconst doubled = numbers.map("
    assert reads_its_own_target("doubled", js, ");\n")
    assert not reads_its_own_target("n => n * 2", js, ");\n")
    assert not reads_its_own_target("numbers.doubled", js, ");\n")  # an attribute reads no name
    body = "def mean(values):\n    "
    assert reads_its_own_target("count = len(count)", body, "\n    return count\n")
    assert not reads_its_own_target("values = list(values)", body, "\n")  # a parameter: bound above
    wrapped = "def mean(\n    values: list[float],\n) -> float:\n    "
    assert not reads_its_own_target("values = list(values)", wrapped, "\n")  # a parameter on a line of its own
    assert not reads_its_own_target("count += count", body, "\n")  # no plain assignment (another rule's case)
    assert not reads_its_own_target('count = "count"', body, "\n")  # quoted: no read
    assert not reads_its_own_target("line = next(line for line in lines)", body, "\n")  # the comprehension's own name
    assert not reads_its_own_target("name=name,", "def f(x):\n    call(\n        ", "\n    )\n")  # a keyword argument
