"""Code blocks the simulator writes when asked for code: small, plausible, and syntactically valid in their
language, named after what the request asked for. Original templates written for LLMSim.

Slots: `{name}` the function's name in the language's convention, `{doc}` a one-line description.
"""

from __future__ import annotations

import re

PYTHON = (
    '''def {name}(values: list[str]) -> list[str]:
    """{doc}"""
    result: list[str] = []
    for value in values:
        cleaned = value.strip()
        if cleaned:
            result.append(cleaned)
    return result


if __name__ == "__main__":
    print({name}(["  alpha ", "", "beta"]))''',
    '''from collections import Counter


def {name}(items: list[str]) -> dict[str, int]:
    """{doc}"""
    counts = Counter(item.lower() for item in items if item)
    return dict(counts.most_common())


if __name__ == "__main__":
    print({name}(["Apple", "apple", "pear"]))''',
    '''def {name}(data: dict[str, float], threshold: float = 0.0) -> list[tuple[str, float]]:
    """{doc}"""
    if not data:
        return []
    selected = [(key, value) for key, value in data.items() if value > threshold]
    return sorted(selected, key=lambda pair: pair[1], reverse=True)


if __name__ == "__main__":
    print({name}({{"a": 3.0, "b": -1.0, "c": 7.5}}))''',
)

JAVASCRIPT = (
    '''/** {doc} */
function {name}(values) {{
  return values
    .map((value) => value.trim())
    .filter((value) => value.length > 0);
}}

console.log({name}(["  alpha ", "", "beta"]));''',
    '''/** {doc} */
function {name}(items) {{
  const counts = new Map();
  for (const item of items) {{
    const key = item.toLowerCase();
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }}
  return Object.fromEntries(counts);
}}

console.log({name}(["Apple", "apple", "pear"]));''',
)

TYPESCRIPT = (
    '''/** {doc} */
export function {name}(values: string[]): string[] {{
  return values
    .map((value) => value.trim())
    .filter((value) => value.length > 0);
}}

console.log({name}(["  alpha ", "", "beta"]));''',
    '''/** {doc} */
export function {name}(items: string[]): Record<string, number> {{
  const counts: Record<string, number> = {{}};
  for (const item of items) {{
    const key = item.toLowerCase();
    counts[key] = (counts[key] ?? 0) + 1;
  }}
  return counts;
}}''',
)

GO = (
    '''package main

import (
\t"fmt"
\t"strings"
)

// {name} {doc_lower}
func {name}(values []string) []string {{
\tresult := make([]string, 0, len(values))
\tfor _, value := range values {{
\t\tif cleaned := strings.TrimSpace(value); cleaned != "" {{
\t\t\tresult = append(result, cleaned)
\t\t}}
\t}}
\treturn result
}}

func main() {{
\tfmt.Println({name}([]string{{"  alpha ", "", "beta"}}))
}}''',
)

RUST = (
    '''/// {doc}
fn {name}(values: &[&str]) -> Vec<String> {{
    values
        .iter()
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
        .map(String::from)
        .collect()
}}

fn main() {{
    println!("{{:?}}", {name}(&["  alpha ", "", "beta"]));
}}''',
)

JAVA = (
    '''import java.util.ArrayList;
import java.util.List;

public class Main {{
    /** {doc} */
    static List<String> {name}(List<String> values) {{
        List<String> result = new ArrayList<>();
        for (String value : values) {{
            String cleaned = value.strip();
            if (!cleaned.isEmpty()) {{
                result.add(cleaned);
            }}
        }}
        return result;
    }}

    public static void main(String[] args) {{
        System.out.println({name}(List.of("  alpha ", "", "beta")));
    }}
}}''',
)

BASH = (
    '''#!/usr/bin/env bash
# {doc}
set -euo pipefail

{name}() {{
  local dir="${{1:-.}}"
  find "$dir" -type f -name '*.log' -mtime +7 -print
}}

{name} "$@"''',
)

SQL = (
    '''-- {doc}
SELECT category, COUNT(*) AS total, AVG(amount) AS average_amount
FROM orders
WHERE created_at >= CURRENT_DATE - INTERVAL '30 days'
GROUP BY category
ORDER BY total DESC
LIMIT 10;''',
)

TEMPLATES: dict[str, tuple[str, ...]] = {
    "python": PYTHON, "javascript": JAVASCRIPT, "typescript": TYPESCRIPT, "go": GO, "rust": RUST, "java": JAVA,
    "bash": BASH, "sql": SQL,
}
DISPLAY = {"python": "Python", "javascript": "JavaScript", "typescript": "TypeScript", "go": "Go", "rust": "Rust",
           "java": "Java", "bash": "Bash", "sql": "SQL"}
CAMEL = ("javascript", "typescript", "java", "go")


def identifier(words: tuple[str, ...], language: str) -> str:
    """A valid name in the language's convention: ('parse', 'dates') → parse_dates or parseDates."""
    parts = [re.sub(r"[^a-z0-9]", "", w.lower()) for w in words]
    parts = [p for p in parts if p] or ["process", "items"]
    if not parts[0][0].isalpha():
        parts.insert(0, "process")
    if language in CAMEL:
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    return "_".join(parts)


def block(language: str, words: tuple[str, ...], doc: str, choice: int) -> str:
    """A fenced code block; `choice` picks one of the language's templates."""
    templates = TEMPLATES[language]
    body = templates[choice % len(templates)].format(name=identifier(words, language), doc=doc,
                                                      doc_lower=doc[:1].lower() + doc[1:])
    return f"```{language}\n{body}\n```"
