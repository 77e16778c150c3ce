"""Plain-text explanation of a failed resolution (dart-lang/pub ``doc/solver.md``, "Error Reporting")."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from resolver.incompatibility import (
    ROOT,
    ConflictCause,
    DependencyCause,
    Incompatibility,
    NoVersionsCause,
    RootCause,
    UnavailableCause,
)
from resolver.term import Term
from resolver.version_set import VersionSet

if TYPE_CHECKING:
    from resolver.errors import NoSolution

__all__ = ["describe", "explain", "report"]

_MAX_SKIPPED = 3


def _identity(package: str) -> str:
    return package


class _Describer:
    """Renders terms and single incompatibilities as English phrases."""

    def __init__(
        self,
        display_name: Callable[[str], str] | None = None,
        root_name: str = "root",
        texts: dict[tuple[str, VersionSet], str] | None = None,
    ) -> None:
        self._display_name = display_name or _identity
        self._root_name = root_name
        # Specifier text as written, for (package, set) pairs that appear in dependencies: a
        # derived term "baz >=3.0.0, <4.0.0" reads "baz ^3.0" when a dependency on baz said "^3.0".
        self._texts = texts or {}

    def package(self, package: str) -> str:
        return self._root_name if package == ROOT else self._display_name(package)

    def term(self, term: Term, *, every: bool = False, source: Incompatibility | None = None) -> str:
        """The package and versions of `term`, whatever its sign (``foo ^1.0``, ``foo 1.2.0``)."""
        name = self.package(term.package)
        if term.package == ROOT:
            return name
        if source is not None and isinstance(source.cause, DependencyCause) and not term.positive:
            text = source.cause.dependency.text
            return name if text == "*" else f"{name} {text}"
        versions = term.versions
        if versions.is_full():
            return f"every version of {name}" if every else name
        single = versions.single_version()
        if single is not None:
            return f"{name} {single}"
        return f"{name} {self._texts.get((term.package, versions)) or versions}"

    def skipped(self, cause: NoVersionsCause, package: str) -> str:
        """What was left out and what there is instead, in brackets: " (1.0.5 is yanked; x has 2.0.0)"."""
        parts = []
        if cause.skipped:
            shown = [f"{version} is {reason}" for version, reason in cause.skipped[:_MAX_SKIPPED]]
            extra = len(cause.skipped) - _MAX_SKIPPED
            if extra > 0:
                shown.append(f"{extra} more {'is' if extra == 1 else 'are'} yanked or pre-releases")
            parts.append(", ".join(shown))
        if cause.others:
            listed = ", ".join(map(str, cause.others))
            name = self.package(package)
            parts.append(f"{name} has {listed}" if cause.other_count == len(cause.others)
                         else f"{name} has {cause.other_count} versions; the newest: {listed}")
        return f" ({'; '.join(parts)})" if parts else ""

    def describe(self, incompatibility: Incompatibility) -> str:
        """One incompatibility as a phrase, by cause (no trailing period)."""
        cause, terms = incompatibility.cause, incompatibility.terms
        if isinstance(cause, DependencyCause) and len(terms) == 2:
            depender, dependee = terms
            return (
                f"{self.term(depender, every=True)} depends on {self.term(dependee, source=incompatibility)}"
            )
        if isinstance(cause, NoVersionsCause) and len(terms) == 1:
            term = terms[0]
            name = self.package(term.package)
            if term.versions.is_full():
                return f"{name} has no versions{self.skipped(cause, term.package)}"
            versions = self._texts.get((term.package, term.versions)) or str(term.versions)
            return f"no versions of {name} match {versions}{self.skipped(cause, term.package)}"
        if isinstance(cause, UnavailableCause) and len(terms) == 1:
            return f"{self.term(terms[0])} is unavailable ({cause.reason})"
        if isinstance(cause, RootCause):
            return f"{self._root_name} is required"
        if incompatibility.is_failure:
            return "version solving failed"
        return self._describe_terms(terms)

    def _describe_terms(self, terms: tuple[Term, ...]) -> str:
        if len(terms) == 1:
            term = terms[0]
            verdict = "forbidden" if term.positive else "required"
            return f"{self.term(term)} is {verdict}"
        if len(terms) == 2 and terms[0].positive == terms[1].positive:
            first, second = self.term(terms[0]), self.term(terms[1])
            if terms[0].positive:
                return f"{first} is incompatible with {second}"
            return f"either {first} or {second}"
        positive = [t for t in terms if t.positive]
        negative = " or ".join(self.term(t) for t in terms if not t.positive)
        if positive and negative:
            if len(positive) == 1:
                return f"{self.term(positive[0], every=True)} requires {negative}"
            return f"if {' and '.join(self.term(t) for t in positive)} then {negative}"
        if positive:
            return f"one of {' or '.join(self.term(t) for t in positive)} must be false"
        return f"one of {negative} must be true"

    # -- two incompatibilities at once ----------------------------------------------------------

    def both(
        self, first: Incompatibility, second: Incompatibility, lines: tuple[int | None, int | None]
    ) -> str:
        """``first and second``, phrased more naturally when a known pattern fits."""
        return (
            self._requires_both(first, second, lines)
            or self._requires_through(first, second, lines)
            or self._requires_forbidden(first, second, lines)
            or f"{self.describe(first)}{_ref(lines[0])} and {self.describe(second)}{_ref(lines[1])}"
        )

    def _requires_both(
        self, first: Incompatibility, second: Incompatibility, lines: tuple[int | None, int | None]
    ) -> str | None:
        """ "foo depends on both bar ^1.0 and baz ^2.0"."""
        if len(first.terms) == 1 or len(second.terms) == 1:
            return None
        first_positive, second_positive = _single(first, True), _single(second, True)
        if first_positive is None or second_positive is None:
            return None
        if first_positive != second_positive:  # the same package *and* the same versions
            return None
        first_negatives = " or ".join(self.term(t, source=first) for t in first.terms if not t.positive)
        second_negatives = " or ".join(self.term(t, source=second) for t in second.terms if not t.positive)
        dependencies = isinstance(first.cause, DependencyCause) and isinstance(second.cause, DependencyCause)
        verb = "depends on" if dependencies else "requires"
        return (
            f"{self.term(first_positive, every=True)} {verb} both "
            f"{first_negatives}{_ref(lines[0])} and {second_negatives}{_ref(lines[1])}"
        )

    def _requires_through(
        self, first: Incompatibility, second: Incompatibility, lines: tuple[int | None, int | None]
    ) -> str | None:
        """ "foo depends on bar ^2.0 which depends on baz ^3.0"."""
        if len(first.terms) == 1 or len(second.terms) == 1:
            return None
        for prior, latter, prior_line, latter_line in (
            (first, second, lines[0], lines[1]),
            (second, first, lines[1], lines[0]),
        ):
            negative, positive = _single(prior, False), _single(latter, True)
            if negative is None or positive is None or negative.package != positive.package:
                continue
            if not negative.negate().satisfies(positive):
                continue
            prefix = self._prefix(prior)
            if prefix is None:
                continue
            verb = "depends on" if isinstance(latter.cause, DependencyCause) else "requires"
            latter_negatives = " or ".join(
                self.term(t, source=latter) for t in latter.terms if not t.positive
            )
            return (
                f"{prefix}{self.term(negative, source=prior)}{_ref(prior_line)} which {verb} "
                f"{latter_negatives}{_ref(latter_line)}"
            )
        return None

    def _requires_forbidden(
        self, first: Incompatibility, second: Incompatibility, lines: tuple[int | None, int | None]
    ) -> str | None:
        """ "foo depends on bar ^2.0 which doesn't match any versions"."""
        if len(first.terms) != 1 and len(second.terms) != 1:
            return None
        if len(first.terms) == 1:
            prior, latter, prior_line, latter_line = second, first, lines[1], lines[0]
        else:
            prior, latter, prior_line, latter_line = first, second, lines[0], lines[1]
        negative = _single(prior, False)
        if negative is None or not negative.negate().satisfies(latter.terms[0]):
            return None
        prefix = self._prefix(prior)
        if prefix is None:
            return None
        cause = latter.cause
        if isinstance(cause, NoVersionsCause):
            verdict = f"which doesn't match any versions{self.skipped(cause, latter.terms[0].package)}"
        elif isinstance(cause, UnavailableCause):
            verdict = f"which is unavailable ({cause.reason})"
        else:
            verdict = "which is forbidden"
        # The prior's own wording of the package ("bar ^2.0"), which the latter's term covers.
        return f"{prefix}{self.term(negative, source=prior)}{_ref(prior_line)} {verdict}{_ref(latter_line)}"

    def _prefix(self, prior: Incompatibility) -> str | None:
        """ "foo ^1.0 depends on " or "if foo ^1.0 and bar 2.0.0 then "."""
        positives = [t for t in prior.terms if t.positive]
        if not positives:
            return None
        if len(positives) > 1:
            return f"if {' and '.join(self.term(t) for t in positives)} then "
        verb = "depends on" if isinstance(prior.cause, DependencyCause) else "requires"
        return f"{self.term(positives[0], every=True)} {verb} "


def _single(incompatibility: Incompatibility, positive: bool) -> Term | None:
    """The only term of the given sign, or None when there are zero or several."""
    found = [t for t in incompatibility.terms if t.positive == positive]
    return found[0] if len(found) == 1 else None


def _ref(line: int | None) -> str:
    return "" if line is None else f" ({line})"


class _Writer:
    """Writes the proof of a failure incompatibility, following the error-reporting algorithm."""

    def __init__(self, root: Incompatibility, describer: _Describer) -> None:
        self._root = root
        self._d = describer
        self._lines: list[tuple[str, int | None]] = []
        self._numbers: dict[int, int] = {}  # id(incompatibility) -> line number
        self._uses: dict[int, int] = {}  # id(incompatibility) -> times used in the tree
        stack = [root]
        while stack:
            node = stack.pop()
            key = id(node)
            if key in self._uses:
                self._uses[key] += 1
                continue
            self._uses[key] = 1
            if isinstance(node.cause, ConflictCause):
                stack.extend((node.cause.other, node.cause.conflict))

    def write(self) -> str:
        if isinstance(self._root.cause, ConflictCause):
            self._visit(self._root)
        else:
            self._write(self._root, f"Because {self._d.describe(self._root)}, version solving failed.")
        width = len(f"({max(self._numbers.values())}) ") if self._numbers else 0
        out: list[str] = []
        for message, number in self._lines:
            if not message:
                if out and out[-1]:
                    out.append("")
                continue
            prefix = f"({number})".ljust(width) if number is not None else " " * width
            out.append(prefix + message)
        return "\n".join(out)

    def _write(self, incompatibility: Incompatibility, message: str, numbered: bool = False) -> None:
        if numbered:
            number = len(self._numbers) + 1
            self._numbers[id(incompatibility)] = number
            self._lines.append((message, number))
        else:
            self._lines.append((message, None))

    def _line(self, incompatibility: Incompatibility) -> int | None:
        return self._numbers.get(id(incompatibility))

    def _visit(self, incompatibility: Incompatibility, conclusion: bool = False) -> None:
        numbered = conclusion or self._uses[id(incompatibility)] > 1
        conjunction = "So," if conclusion or incompatibility is self._root else "And"
        text = self._d.describe(incompatibility)
        cause = incompatibility.cause
        assert isinstance(cause, ConflictCause)
        conflict, other = cause.conflict, cause.other
        if conflict.is_derived and other.is_derived:
            self._visit_two_derived(incompatibility, conflict, other, text, conjunction, numbered)
        elif conflict.is_derived or other.is_derived:
            derived, external = (conflict, other) if conflict.is_derived else (other, conflict)
            self._visit_one_derived(incompatibility, derived, external, text, conjunction, numbered)
        else:
            both = self._d.both(conflict, other, (None, None))
            self._write(incompatibility, f"Because {both}, {text}.", numbered)

    def _visit_two_derived(
        self,
        incompatibility: Incompatibility,
        conflict: Incompatibility,
        other: Incompatibility,
        text: str,
        conjunction: str,
        numbered: bool,
    ) -> None:
        conflict_line, other_line = self._line(conflict), self._line(other)
        if conflict_line is not None and other_line is not None:
            both = self._d.both(conflict, other, (conflict_line, other_line))
            self._write(incompatibility, f"Because {both}, {text}.", numbered)
        elif conflict_line is not None or other_line is not None:
            with_line, without_line = (conflict, other) if conflict_line is not None else (other, conflict)
            self._visit(without_line)
            line = self._line(with_line)
            self._write(
                incompatibility,
                f"{conjunction} because {self._d.describe(with_line)} ({line}), {text}.",
                numbered,
            )
        elif _single_line(conflict) or _single_line(other):
            # The simple cause fits on one line right before the conclusion.
            first, second = (conflict, other) if _single_line(other) else (other, conflict)
            self._visit(first)
            line = self._line(second)
            if line is not None:  # already written while explaining `first`
                self._write(
                    incompatibility,
                    f"{conjunction} because {self._d.describe(second)} ({line}), {text}.",
                    numbered,
                )
                return
            self._visit(second)
            self._write(incompatibility, f"Thus, {text}.", numbered)
        else:
            self._visit(conflict, conclusion=True)
            self._lines.append(("", None))
            self._visit(other)
            line = self._line(conflict)
            self._write(
                incompatibility,
                f"{conjunction} because {self._d.describe(conflict)} ({line}), {text}.",
                numbered,
            )

    def _visit_one_derived(
        self,
        incompatibility: Incompatibility,
        derived: Incompatibility,
        external: Incompatibility,
        text: str,
        conjunction: str,
        numbered: bool,
    ) -> None:
        derived_line = self._line(derived)
        if derived_line is not None:
            both = self._d.both(external, derived, (None, derived_line))
            self._write(incompatibility, f"Because {both}, {text}.", numbered)
        elif self._collapsible(derived):
            inner = derived.cause
            assert isinstance(inner, ConflictCause)
            prior_derived, prior_external = (
                (inner.conflict, inner.other) if inner.conflict.is_derived else (inner.other, inner.conflict)
            )
            self._visit(prior_derived)
            both = self._d.both(prior_external, external, (None, None))
            self._write(incompatibility, f"{conjunction} because {both}, {text}.", numbered)
        else:
            self._visit(derived)
            self._write(
                incompatibility, f"{conjunction} because {self._d.describe(external)}, {text}.", numbered
            )

    def _collapsible(self, incompatibility: Incompatibility) -> bool:
        """Whether a derivation with one derived and one external cause can be folded into the next line."""
        if self._uses[id(incompatibility)] > 1:
            return False
        cause = incompatibility.cause
        assert isinstance(cause, ConflictCause)
        if cause.conflict.is_derived == cause.other.is_derived:
            return False
        complex_cause = cause.conflict if cause.conflict.is_derived else cause.other
        return self._line(complex_cause) is None


def _single_line(incompatibility: Incompatibility) -> bool:
    """Whether a derived incompatibility comes straight from two external ones."""
    cause = incompatibility.cause
    assert isinstance(cause, ConflictCause)
    return not cause.conflict.is_derived and not cause.other.is_derived


def _dependency_texts(root: Incompatibility) -> dict[tuple[str, VersionSet], str]:
    texts: dict[tuple[str, VersionSet], str] = {}
    for leaf in root.external_incompatibilities():
        if isinstance(leaf.cause, DependencyCause):
            dependency = leaf.cause.dependency
            if dependency.text != "*":
                texts.setdefault((dependency.package, dependency.spec), dependency.text)
    return texts


def describe(
    incompatibility: Incompatibility,
    *,
    display_name: Callable[[str], str] | None = None,
    root_name: str = "root",
) -> str:
    """One incompatibility as a phrase, e.g. ``foo >=1.1.0 depends on bar ^2.0``."""
    return _Describer(display_name, root_name).describe(incompatibility)


def report(
    incompatibility: Incompatibility,
    *,
    display_name: Callable[[str], str] | None = None,
    root_name: str = "root",
) -> str:
    """The multi-line explanation of why `incompatibility` (a failure) holds; plain text, no markup.

    The derivation tree is walked depth first and written as "Because … / And because … / So,
    because …" lines. Derived incompatibilities that are used more than once get a line number,
    ``(1)``, so later lines can refer back to them; a blank line separates independent branches.
    Each incompatibility renders itself by cause ("foo 1.0.0 depends on bar ^2.0", "no versions of
    bar match >=3.0.0", "baz is unavailable (not found)"). Packages are named through a
    ``display_name`` function; the root package is called ``root_name`` and shown without version.
    """
    describer = _Describer(display_name, root_name, _dependency_texts(incompatibility))
    try:
        return _Writer(incompatibility, describer).write()
    except RecursionError:  # pragma: no cover - a derivation deeper than Python's stack
        causes = [describer.describe(leaf) for leaf in incompatibility.external_incompatibilities()]
        return "Version solving failed because:\n" + "\n".join(f"- {cause}" for cause in causes)


def explain(failure: NoSolution) -> str:
    """The explanation of a failed resolution, naming packages as the solver's caller asked."""
    return report(failure.incompatibility, display_name=failure.display_name, root_name=failure.root_name)
