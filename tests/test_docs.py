"""The documentation runs: every ```python block of docs/*.md (blocks of one page share a
namespace, in order) and every docstring example in the clgrad package."""
import doctest
import importlib
import os
import pkgutil
import re

import pytest

import clgrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = sorted(f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("page", DOCS)
def test_doc_page_examples_run(page, device, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                  # examples that write files write them here
    monkeypatch.syspath_prepend(os.path.join(ROOT, "tools"))   # for the training example's data
    text = open(os.path.join(ROOT, "docs", page)).read()
    blocks = BLOCK.findall(text)
    ns = {"__name__": f"docs_{page[:-3]}"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/{page} block {i + 1}", "exec"), ns)
        except Exception as e:
            raise AssertionError(f"docs/{page}, python block {i + 1} failed: {e!r}\n{code}") \
                from e


def _modules():
    names = ["clgrad"]
    for m in pkgutil.walk_packages(clgrad.__path__, "clgrad."):
        if m.name.endswith("__main__"):
            continue
        names.append(m.name)
    return names


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name, device):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        if test.examples:
            runner.run(test)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{res.failed} docstring example(s) failed in {name}"
