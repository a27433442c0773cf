"""The prose the simulator writes, as templates: original text written for LLMSim.

Slots: `{topic}` the question's main subject, `{other}` a second one (or the first again), `{a}` and `{b}`
the two things a comparison compares. Sentences are generic on purpose, so that any subject reads well.
"""

from __future__ import annotations

# The first sentence of an answer to a question: the answer comes first.
DIRECT_ANSWERS = (
    "In short, the answer on {topic} comes down to a few clear ideas that are easy to apply once you see them.",
    "The short answer is that with {topic}, it works best to keep things simple and measure what actually happens.",
    "For most people, time spent on {topic} is worth the effort, as long as you start small and check the results.",
    "Put simply, understanding {topic} means turning a vague picture into points you can check one at a time.",
    "The quick answer: it depends mostly on the details of {topic}, and the basics are a good place to begin.",
    "Most of the time, the question of {topic} is simpler than it first looks, and the basics cover most cases.",
    "It usually helps to think of {topic} as a trade between speed, cost and how much control you need.",
    "The best answer is to start with the simplest version of {topic} and improve it only where it hurts.",
)

# The first sentence of an answer to a request that is not a question.
OPENINGS = (
    "The subject of {topic} is broad, so it helps to start with the part that matters most.",
    "There is a lot to say about {topic}, but a few ideas carry most of the weight.",
    "Here is an overview of {topic}, starting with the essentials.",
    "A good way into {topic} is to look at what it is for before looking at how it works.",
    "When it comes to {topic}, the fundamentals are more useful than the fine print.",
)

# Sentences that support an answer; any order reads well.
BODY = (
    "The key idea with {topic} is that small, steady steps work better than one big leap.",
    "A good first step is to write down what you already know about {topic}, so the gaps are easy to see.",
    "In practice, most problems with {topic} come from unclear assumptions rather than hard technical limits.",
    "It also helps to look at {other} early, because it shapes many of the later choices.",
    "Keep the feedback loop short: try one change, look at the result, and only then move on.",
    "When something goes wrong, the cause is usually one of a handful of common mistakes.",
    "A simple checklist catches most of those mistakes before they cost you time.",
    "People who are new to {topic} often try to do everything at once, which makes problems hard to trace.",
    "Good defaults matter here, and the standard ones are sensible for most situations.",
    "If you have to choose, favour the option that is easier to undo later.",
    "Measuring before and after each change gives you evidence instead of guesses.",
    "Documentation and small examples are worth the time, since they show {topic} in real use.",
    "The details vary between setups, but the underlying principles stay the same.",
    "It is fine to revisit an early decision once you know more about {other}.",
    "Most of the value comes from getting the basics right and keeping them consistent.",
    "Edge cases deserve a quick look, although they rarely change the overall approach.",
    "A second pair of eyes on {topic} often spots issues that are easy to miss on your own.",
    "Writing the reasoning down makes it easier to explain {topic} to someone else later.",
    "Over time, the habits you build around {topic} matter more than any single tool.",
    "The link between {topic} and {other} is worth a closer look, since it explains much of the rest.",
    "Automating the repetitive parts frees your attention for the decisions that need judgement.",
    "When in doubt, a small experiment settles the question faster than a long debate.",
    "Clear names and a tidy structure make {topic} much easier to maintain.",
    "It is worth planning for failure, because even a careful setup meets surprises.",
)

CLOSINGS = (
    "If you share more about your situation, I can make this more specific.",
    "Start there, and adjust once you see how it behaves in practice.",
    "That should give you a solid footing; the rest is refinement.",
    "Let me know which part you would like to explore in more depth.",
    "With those pieces in place, reasoning about {topic} becomes much easier.",
)

LIST_INTROS = (
    "Here are the points about {topic} that matter most:",
    "A few ideas worth considering for {topic}:",
    "These are the main things to keep in mind about {topic}:",
    "Here is a short list to get you started with {topic}:",
)

# Bullet items: a bold lead and a sentence.
LIST_ITEMS = (
    "**Start small:** get one part of {topic} working well before you expand it.",
    "**Be clear about the goal:** a one-line statement of what you want keeps every later choice honest.",
    "**Measure it:** pick one or two numbers that show whether things are getting better.",
    "**Keep it simple:** the plain solution is easier to debug, explain and change.",
    "**Learn from examples:** a small working example of {topic} teaches more than a long description.",
    "**Plan for mistakes:** make changes easy to undo so that experiments stay cheap.",
    "**Automate the routine:** let scripts handle the repetitive parts of {other}.",
    "**Write things down:** short notes save time when you come back to {topic} later.",
    "**Ask for feedback:** someone with fresh eyes will notice what you have stopped seeing.",
    "**Watch the costs:** time, money and attention are all limited, so spend them where they count.",
    "**Check the defaults:** they are often good, and knowing them avoids surprises.",
    "**Review regularly:** a short look back every few weeks keeps {topic} on track.",
)

STEP_INTROS = (
    "Here is a practical way to approach {topic}:",
    "You can work through {topic} in a few steps:",
    "A step-by-step plan for {topic}:",
)

# Numbered steps in a sensible order: they are used front to back.
STEPS = (
    "**Define the goal.** Write down what {topic} should achieve and how you will know it worked.",
    "**Gather what you need.** Collect the tools, access and information before you begin.",
    "**Check the prerequisites.** Make sure you have {other} in place, since later steps depend on it.",
    "**Start with a minimal version.** Get the simplest form of {topic} running end to end.",
    "**Test it.** Try the common case first, then one or two edge cases.",
    "**Improve one thing at a time.** Change a single part, compare the result, and keep what helps.",
    "**Handle the failures.** Decide what should happen when something goes wrong, and try it on purpose.",
    "**Document the result.** Note the decisions you made and why, so others can follow them.",
    "**Review and repeat.** Look back at the goal, and repeat the cycle where the gap is largest.",
)

TABLE_INTROS = (
    "Here is how {a} and {b} compare on the points that usually matter:",
    "A side-by-side look at {a} and {b}:",
    "The main differences between {a} and {b}:",
)

# (aspect, one side, the contrasting side): which of a and b gets which side is drawn per answer.
TABLE_ROWS = (
    ("Getting started", "Quick to pick up", "More to learn up front"),
    ("Performance", "Fast for typical workloads", "Faster at the high end with tuning"),
    ("Flexibility", "Opinionated defaults", "Highly configurable"),
    ("Ecosystem", "Large and mature", "Smaller but growing"),
    ("Cost", "Lower to run at small scale", "Cheaper per unit at large scale"),
    ("Maintenance", "Little ongoing effort", "Needs regular attention"),
    ("Best for", "Small teams and prototypes", "Large systems with specific needs"),
    ("Community support", "Plenty of answers online", "Fewer but deeper resources"),
)

TABLE_CLOSINGS = (
    "Choose {a} if you value a quick start, and {b} if you need more control as you grow.",
    "Neither is better in every case: {a} suits simpler needs, while {b} pays off for demanding ones.",
    "For most new projects {a} is the safer default, but {b} is worth a look when the limits start to bite.",
)

CODE_INTROS = (
    "Here is a {language} version you can start from:",
    "Here is a small, self-contained {language} example:",
    "This {language} snippet does the job and is easy to adapt:",
)

CODE_NOTES = (
    "The function keeps its inputs untouched and returns a new value, which makes it easy to test.",
    "Swap the sample data for your own to try it out.",
    "It handles empty input gracefully, so you can call it without extra checks.",
    "For larger inputs, the same structure works; only the data source changes.",
    "Add type checks or logging around it if you need them in production.",
    "The example at the bottom shows how to call it.",
)

# Reasoning summaries: the plan for the answer, in the voice of a model thinking ahead.
PLANS = {
    "code": (
        "Identify the inputs and outputs the {language} code needs.",
        "Outline the function before writing it.",
        "Keep the example small and self-contained so it runs as is.",
        "Check the edge cases: empty input and unexpected values.",
        "Add a short explanation and a usage example after the code.",
    ),
    "steps": (
        "Identify the key steps for {topic}.",
        "Put them in the order a beginner would follow.",
        "Keep each step short and actionable.",
        "Mention the prerequisites before the first step.",
        "End with how to check that it worked.",
    ),
    "list": (
        "Collect the most useful points about {topic}.",
        "Drop the ones that overlap and order the rest by impact.",
        "Give each item a bold lead so the list is easy to scan.",
        "Keep the explanations to one sentence each.",
    ),
    "table": (
        "Compare {a} and {b} on the aspects that matter most.",
        "Pick aspects where they really differ.",
        "Present them in a table so the differences are easy to scan.",
        "Finish with a recommendation for when to choose each.",
    ),
    "question": (
        "Identify what the user wants to know about {topic}.",
        "Lead with a direct answer.",
        "Support it with two or three concrete points.",
        "Keep the tone plain and avoid jargon.",
        "Offer to go deeper if needed.",
    ),
    "prose": (
        "Work out the main point about {topic}.",
        "Organise the answer around a few clear ideas.",
        "Add practical advice the user can act on.",
        "Keep it concise and friendly.",
    ),
}

FALLBACK_TOPIC = "this topic"
FALLBACK_OTHER = "the rest of the setup"

# Classic filler, for --text-mode lorem.
LOREM_OPENING = "Lorem ipsum dolor sit amet, consectetur adipiscing elit."
LOREM_WORDS = tuple("""
lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna
aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute
irure in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non
proident sunt culpa qui officia deserunt mollit anim id est laborum
""".split())
