"""Static readings of the dataset's test code (trusted: made by the supervisor before the
sample runs): the test methods a run must report, and those the test code lets skip."""


def expected_tests(test_code):
    """Names of the `test*` methods defined on class TestCases, or None if not determinable."""
    import ast

    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return None
    names = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            names = []
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    if item.name not in names:
                        names.append(item.name)
    return names


# unittest's names for "skip" and "expect failure" (what test code may declare).
SKIP_NAMES = frozenset(("skip", "skipIf", "skipUnless", "skipTest", "SkipTest", "expectedFailure", "_ShouldStop"))


def declared_skips(test_code):
    """Test methods the test code itself lets skip or expect failure (decorators or calls
    in the method); "*" when the class, a fixture or a helper does."""
    import ast

    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return ["*"]

    def mentions(node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in SKIP_NAMES:
                return True
            if isinstance(n, ast.Attribute) and n.attr in SKIP_NAMES:
                return True
        return False

    out = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            if any(mentions(d) for d in node.decorator_list):
                return ["*"]
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and mentions(item):
                    if item.name.startswith("test"):
                        out.append(item.name)
                    else:
                        return ["*"]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and mentions(node):
            return ["*"]  # a module-level helper or fixture of the test code
    return out
