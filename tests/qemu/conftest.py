"""conftest.py - pytest fixtures for the QEMU tests.

A test module sets APPLIANCE_CONFIG (the p2pstore.cfg text) and uses the module-scoped
`appliance` fixture: one boot shared by all the module's tests, in file order.
On any failure the serial log's tail is attached to the report.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness import Appliance, strip_ansi  # noqa: E402


@pytest.fixture(scope="module")
def appliance(request):
    config = getattr(request.module, "APPLIANCE_CONFIG", "panic = exit\n")
    name = request.module.__name__.split(".")[-1]
    app = Appliance(name, config=config)
    try:
        app.boot()
        yield app
    finally:
        app.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    app = item.funcargs.get("appliance") if hasattr(item, "funcargs") else None
    if report.failed and app is not None:
        try:
            with open(app.log_path, errors="replace") as f:
                report.sections.append(("serial console (tail)", strip_ansi(f.read())[-3000:]))
        except OSError:
            pass
