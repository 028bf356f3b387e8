"""A custom assertion: skillab calls check(output, ctx) and takes a bool or {pass, message, score}."""


def check(output, ctx):
    words = output.split()
    if len(words) > 4 or output.rstrip().endswith("."):
        return {"pass": False, "message": f"a sentence of {len(words)} words, not a bare answer"}
    return {"pass": True, "message": "a bare answer"}
