"""A reader for the BIF (Bayesian Interchange Format) network files.

Written for this project from the format description (Cozman's BIF 0.15 interchange
format as used by bnlearn's repository). Grammar accepted::

    file         := block*
    block        := "network" NAME? "{" anything "}"
                  | "variable" NAME "{" (type_stmt | property_stmt)* "}"
                  | "probability" "(" NAME ("|" NAME ([","] NAME)*)? ")" "{" entry* "}"
    type_stmt    := "type" "discrete" "[" INT "]" "{" LABEL ([","] LABEL)* "}" ";"
    property_stmt:= "property" anything ";"
    entry        := "table" NUMBER ([","] NUMBER)* ";"
                  | "default" NUMBER ([","] NUMBER)* ";"
                  | "(" LABEL ([","] LABEL)* ")" NUMBER ([","] NUMBER)* ";"
                  | property_stmt

Names and labels are bare words or double-quoted strings; ``//`` and ``/* */`` comments
are skipped; separators may be commas or whitespace. In a ``table`` entry the child
varies slowest and the parents follow in declared order, the last parent fastest
(the bnlearn / BIF convention). Explicit ``(parent states) p1, ..., pk;`` rows list the
parents' states in declared order; a ``default`` entry fills every configuration that
has no explicit row.

Every error is a :class:`~dpcg.errors.BifParseError` whose message gives the source
name and line.
"""

from __future__ import annotations

import gzip
import math
import os
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import BifParseError

__all__ = ["BifModel", "parse_bif", "read_bif"]

#: Largest allowed |sum(row) - 1| of a CPT row before it is rejected (rows are then
#: renormalised exactly). bnlearn files print probabilities with up to 4 decimals.
ROW_SUM_TOLERANCE = 1e-3

_TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*.*?\*/)
    | (?P<string>"(?:[^"\\\n]|\\.)*")
    | (?P<punct>[{}()\[\],;|])
    | (?P<word>(?:[^\s{}()\[\],;|"/]|/(?![/*]))+)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class _Tok:
    kind: str  # "string", "punct" or "word"
    text: str
    line: int


@dataclass
class BifModel:
    """The parsed content of a BIF file, in declaration order.

    ``cpts[v]`` has shape ``(*parent_cardinalities, cardinality)`` and each last-axis
    row sums to 1 (renormalised exactly after the tolerance check).
    """

    name: str
    variables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    parents: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cpts: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)


def _tokenize(text: str, source: str) -> list[_Tok]:
    newlines = [m.start() for m in re.finditer("\n", text)]
    tokens: list[_Tok] = []
    pos = 0
    end = len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        line = bisect_right(newlines, pos - 1) + 1 if newlines else 1
        if m is None or m.end() == pos:
            snippet = text[pos : pos + 20].split("\n")[0]
            what = "unterminated comment" if text.startswith("/*", pos) else (
                "unterminated string" if text.startswith('"', pos) else f"unexpected {snippet!r}"
            )
            raise BifParseError(f"{source}, line {line}: {what}")
        kind = m.lastgroup
        assert kind is not None
        if kind in ("string", "punct", "word"):
            body = m.group()
            if kind == "string":
                body = re.sub(r"\\(.)", r"\1", body[1:-1])
            tokens.append(_Tok(kind, body, line))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[_Tok], source: str) -> None:
        self.toks = tokens
        self.i = 0
        self.source = source
        self.last_line = tokens[-1].line if tokens else 1

    # -- token helpers -----------------------------------------------------------------
    def error(self, message: str, line: int | None = None) -> BifParseError:
        if line is None:
            line = self.toks[self.i].line if self.i < len(self.toks) else self.last_line
        return BifParseError(f"{self.source}, line {line}: {message}")

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, what: str) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise self.error(f"unexpected end of file, expected {what}")
        self.i += 1
        return tok

    def is_punct(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "punct" and tok.text == text

    def expect(self, text: str) -> _Tok:
        tok = self.next(repr(text))
        if tok.kind != "punct" or tok.text != text:
            raise self.error(f"expected {text!r}, got {tok.text!r}", tok.line)
        return tok

    def name(self, what: str) -> _Tok:
        tok = self.next(what)
        if tok.kind == "punct":
            raise self.error(f"expected {what}, got {tok.text!r}", tok.line)
        if tok.text == "":
            raise self.error(f"empty {what}", tok.line)
        return tok

    def skip_statement(self) -> None:
        """Skip to and past the next ``;`` (property statements)."""
        start = self.toks[self.i - 1].line if self.i else 1
        while True:
            tok = self.peek()
            if tok is None:
                raise self.error("unterminated statement (missing ';')", start)
            self.i += 1
            if tok.kind == "punct" and tok.text == ";":
                return
            if tok.kind == "punct" and tok.text in "{}":
                raise self.error(f"unexpected {tok.text!r} in a property statement", tok.line)

    def labels_until(self, closer: str, what: str) -> list[_Tok]:
        """Labels separated by commas and/or whitespace, up to ``closer`` (consumed)."""
        out: list[_Tok] = []
        expect_label = True
        while True:
            tok = self.next(f"{what} or {closer!r}")
            if tok.kind == "punct":
                if tok.text == closer and out and expect_label is False:
                    return out
                if tok.text == closer and not out:
                    raise self.error(f"empty list of {what}", tok.line)
                if tok.text == "," and not expect_label:
                    expect_label = True
                    continue
                raise self.error(f"unexpected {tok.text!r} in a list of {what}", tok.line)
            out.append(tok)
            expect_label = False

    def numbers(self) -> tuple[list[float], int]:
        """Numbers separated by commas and/or whitespace, up to ``;`` (consumed)."""
        toks = self.labels_until(";", "probabilities")
        values: list[float] = []
        for tok in toks:
            try:
                if tok.kind != "word":
                    raise ValueError
                value = float(tok.text)
            except ValueError:
                raise self.error(f"expected a probability, got {tok.text!r}", tok.line) from None
            if not math.isfinite(value) or value < 0:
                raise self.error(f"probability {tok.text!r} is not a finite number >= 0", tok.line)
            values.append(value)
        return values, toks[0].line

    # -- blocks ------------------------------------------------------------------------
    def parse(self, model: BifModel) -> list[_ProbBlock]:
        blocks: list[_ProbBlock] = []
        while (tok := self.peek()) is not None:
            self.i += 1
            if tok.kind == "word" and tok.text == "network":
                self.network_block()
            elif tok.kind == "word" and tok.text == "variable":
                self.variable_block(model, tok.line)
            elif tok.kind == "word" and tok.text == "probability":
                blocks.append(self.probability_block(tok.line))
            else:
                raise self.error(
                    f"expected 'network', 'variable' or 'probability', got {tok.text!r}", tok.line
                )
        return blocks

    def network_block(self) -> None:
        while not self.is_punct("{"):
            self.next("'{' after 'network'")
        open_tok = self.expect("{")
        depth = 1
        while depth:
            tok = self.peek()
            if tok is None:
                raise self.error("unterminated network block (missing '}')", open_tok.line)
            self.i += 1
            if tok.kind == "punct" and tok.text == "{":
                depth += 1
            elif tok.kind == "punct" and tok.text == "}":
                depth -= 1

    def variable_block(self, model: BifModel, line: int) -> None:
        name_tok = self.name("a variable name")
        name = name_tok.text
        if name in model.variables:
            raise self.error(
                f"variable {name!r} declared twice (first at line {model.lines[name]})",
                name_tok.line,
            )
        self.expect("{")
        states: tuple[str, ...] | None = None
        while not self.is_punct("}"):
            tok = self.name("'type', 'property' or '}'")
            if tok.text == "property":
                self.skip_statement()
                continue
            if tok.text != "type":
                raise self.error(f"expected 'type' or 'property', got {tok.text!r}", tok.line)
            if states is not None:
                raise self.error(f"variable {name!r} has two type statements", tok.line)
            kind = self.name("'discrete'")
            if kind.text != "discrete":
                raise self.error(
                    f"variable {name!r}: only discrete variables are supported, got "
                    f"type {kind.text!r}",
                    kind.line,
                )
            self.expect("[")
            count_tok = self.name("the number of states")
            self.expect("]")
            self.expect("{")
            labels = self.labels_until("}", "states")
            self.expect(";")
            try:
                count = int(count_tok.text)
            except ValueError:
                raise self.error(
                    f"variable {name!r}: number of states {count_tok.text!r} is not an integer",
                    count_tok.line,
                ) from None
            states = tuple(t.text for t in labels)
            if count != len(states):
                raise self.error(
                    f"variable {name!r} declares {count} states but lists {len(states)}",
                    count_tok.line,
                )
            if len(set(states)) != len(states):
                dup = next(s for s in states if states.count(s) > 1)
                raise self.error(f"variable {name!r}: duplicate state {dup!r}", count_tok.line)
        self.expect("}")
        if states is None:
            raise self.error(f"variable {name!r} has no 'type discrete' statement", line)
        model.variables[name] = states
        model.lines[name] = line

    def probability_block(self, line: int) -> _ProbBlock:
        self.expect("(")
        child = self.name("the variable of a probability block")
        parents: list[_Tok] = []
        if self.is_punct("|"):
            self.i += 1
            parents = self.labels_until(")", "parent names")
        else:
            self.expect(")")
        block = _ProbBlock(child, parents, line)
        self.expect("{")
        while not self.is_punct("}"):
            tok = self.next("'table', 'default', '(' or '}'")
            if tok.kind == "punct" and tok.text == "(":
                labels = self.labels_until(")", "parent states")
                values, vline = self.numbers()
                block.rows.append((labels, values, vline))
            elif tok.kind == "word" and tok.text == "table":
                if block.table is not None:
                    raise self.error(f"{child.text!r}: two 'table' entries", tok.line)
                block.table = self.numbers()
            elif tok.kind == "word" and tok.text == "default":
                if block.default is not None:
                    raise self.error(f"{child.text!r}: two 'default' entries", tok.line)
                block.default = self.numbers()
            elif tok.kind == "word" and tok.text == "property":
                self.skip_statement()
            else:
                raise self.error(
                    f"expected 'table', 'default', '(' or '}}' in the probability block of "
                    f"{child.text!r}, got {tok.text!r}",
                    tok.line,
                )
        self.expect("}")
        return block


@dataclass
class _ProbBlock:
    child: _Tok
    parents: list[_Tok]
    line: int
    rows: list[tuple[list[_Tok], list[float], int]] = field(default_factory=list)
    table: tuple[list[float], int] | None = None
    default: tuple[list[float], int] | None = None


def _build_cpt(block: _ProbBlock, model: BifModel, source: str) -> NDArray[np.float64]:
    child = block.child.text

    def err(message: str, line: int) -> BifParseError:
        return BifParseError(f"{source}, line {line}: {message}")

    card = len(model.variables[child])
    parents = [t.text for t in block.parents]
    pcards = [len(model.variables[p]) for p in parents]
    n_configs = math.prod(pcards)
    if block.table is not None and block.rows:
        raise err(f"{child!r}: a probability block cannot mix 'table' and explicit rows",
                  block.line)
    cpt = np.full((n_configs, card), np.nan)
    if block.table is not None:
        values, vline = block.table
        if len(values) != card * n_configs:
            raise err(
                f"{child!r}: table has {len(values)} entries, expected {card * n_configs} "
                f"({card} states x {n_configs} parent configurations)",
                vline,
            )
        cpt[:] = np.asarray(values).reshape(card, n_configs).T
    strides = [math.prod(pcards[k + 1 :]) for k in range(len(pcards))]
    lookups = [{s: i for i, s in enumerate(model.variables[p])} for p in parents]
    seen: dict[int, int] = {}
    for labels, values, vline in block.rows:
        if len(labels) != len(parents):
            raise err(
                f"{child!r}: row lists {len(labels)} parent state(s), expected {len(parents)}",
                vline,
            )
        index = 0
        for k, tok in enumerate(labels):
            code = lookups[k].get(tok.text)
            if code is None:
                raise err(
                    f"{child!r}: {tok.text!r} is not a state of parent {parents[k]!r} "
                    f"(states {list(model.variables[parents[k]])})",
                    tok.line,
                )
            index += code * strides[k]
        if index in seen:
            raise err(
                f"{child!r}: parent configuration {[t.text for t in labels]} given twice "
                f"(first at line {seen[index]})",
                vline,
            )
        seen[index] = vline
        if len(values) != card:
            raise err(f"{child!r}: row has {len(values)} probabilities, expected {card}", vline)
        cpt[index] = values
    if block.default is not None:
        values, vline = block.default
        if len(values) != card:
            raise err(
                f"{child!r}: default has {len(values)} probabilities, expected {card}", vline
            )
        unset = np.isnan(cpt[:, 0])
        cpt[unset] = values
    unset = np.isnan(cpt[:, 0])
    if unset.any():
        missing = int(np.flatnonzero(unset)[0])
        config = [
            model.variables[p][(missing // strides[k]) % pcards[k]] for k, p in enumerate(parents)
        ]
        raise err(
            f"{child!r}: no probabilities for parent configuration {config} "
            f"({int(unset.sum())} configuration(s) missing, and no 'default')",
            block.line,
        )
    sums = cpt.sum(axis=1)
    bad = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise err(
            f"{child!r}: probabilities of parent configuration #{row} sum to {float(sums[row])!r}, "
            "not 1",
            block.line,
        )
    cpt /= sums[:, None]
    return cpt.reshape((*pcards, card))


def _check_acyclic(model: BifModel, source: str) -> None:
    state = dict.fromkeys(model.variables, 0)  # 0 new, 1 on stack, 2 done
    for root in model.variables:
        if state[root]:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, k = stack[-1]
            pars = model.parents[node]
            if k < len(pars):
                stack[-1] = (node, k + 1)
                nxt = pars[k]
                if state[nxt] == 1:
                    cycle = [n for n, _ in stack]
                    cycle = cycle[cycle.index(nxt) :]
                    raise BifParseError(
                        f"{source}, line {model.lines[node]}: the parent relation has a "
                        f"cycle through {cycle}"
                    )
                if state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                stack.pop()


def parse_bif(text: str, source: str = "<string>", name: str = "unknown") -> BifModel:
    """Parse BIF ``text``; ``source`` names it in error messages."""
    tokens = _tokenize(text, source)
    parser = _Parser(tokens, source)
    model = BifModel(name=name)
    blocks = parser.parse(model)
    if not model.variables:
        raise BifParseError(f"{source}, line 1: no variables declared")
    by_child: dict[str, _ProbBlock] = {}
    for block in blocks:
        child = block.child.text
        if child not in model.variables:
            raise BifParseError(
                f"{source}, line {block.child.line}: probability block for undeclared "
                f"variable {child!r}"
            )
        if child in by_child:
            raise BifParseError(
                f"{source}, line {block.line}: second probability block for {child!r} "
                f"(first at line {by_child[child].line})"
            )
        for tok in block.parents:
            if tok.text not in model.variables:
                raise BifParseError(
                    f"{source}, line {tok.line}: parent {tok.text!r} of {child!r} is not a "
                    "declared variable"
                )
            if tok.text == child:
                raise BifParseError(f"{source}, line {tok.line}: {child!r} is its own parent")
        names = [t.text for t in block.parents]
        if len(set(names)) != len(names):
            raise BifParseError(f"{source}, line {block.line}: {child!r} lists a parent twice")
        by_child[child] = block
    for var in model.variables:
        if var not in by_child:
            raise BifParseError(
                f"{source}, line {model.lines[var]}: variable {var!r} has no probability block"
            )
        model.parents[var] = tuple(t.text for t in by_child[var].parents)
    _check_acyclic(model, source)
    for var in model.variables:
        model.cpts[var] = _build_cpt(by_child[var], model, source)
    return model


def read_bif(path: str | os.PathLike[str]) -> BifModel:
    """Read a ``.bif`` or gzip-compressed ``.bif.gz`` file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise BifParseError(f"{p}: cannot read BIF file: {exc}") from None
    return bif_from_bytes(raw, p)


def bif_stem(filename: str) -> str:
    """``andes.bif.gz`` -> ``andes`` (the endings in any case)."""
    if filename.lower().endswith(".gz"):
        filename = filename[:-3]
    return filename[:-4] if filename.lower().endswith(".bif") else filename


def bif_from_bytes(raw: bytes, path: str | os.PathLike[str]) -> BifModel:
    """Parse the bytes of a ``.bif`` file, or of a ``.bif.gz`` one (``path`` names it
    and says which; the model is named after its stem)."""
    p = Path(path)
    stem = bif_stem(p.name)
    try:
        if p.suffix.lower() == ".gz":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise BifParseError(f"{p}: cannot read BIF file: {exc}") from None
    except UnicodeDecodeError as exc:
        raise BifParseError(f"{p}: not UTF-8 text: {exc}") from None
    return parse_bif(text, source=p.name, name=stem)
