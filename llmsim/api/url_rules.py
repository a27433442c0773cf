"""URL rules whose builders (for `url_for`) are compiled when first used, not when the rule is added.

werkzeug compiles two Python functions per rule as it is added, to build its URL; for the app's ~100 rules that is
~0.1 s of every worker's start (`compile()` of generated source), and the server never builds a URL from a rule.
Matching requests is unchanged: it uses the rule's regular expressions, made as before.
"""

from __future__ import annotations

from typing import Any

from werkzeug.routing import Rule


class LazyBuildRule(Rule):
    def _compile_builder(self, append_unknown: bool = True) -> Any:
        name = "_build_unknown" if append_unknown else "_build"

        def build(rule: Rule, **values: Any) -> tuple[str, str]:
            real = Rule._compile_builder(rule, append_unknown).__get__(rule, None)
            setattr(rule, name, real)  # the next build calls it directly
            return real(**values)

        return build
