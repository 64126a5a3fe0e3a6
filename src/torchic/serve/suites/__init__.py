"""Built-in suites of the page: one file per suite family, each calling define_test /
define_bench at import time. Files starting with ``_`` are helpers, not suites.

To add a suite, drop a file here (or in a folder passed with ``--suites``):

    from torchic.serve import define_test
    from torchic.serve.suites._common import backends, unavailable_backends

    def my_check(run, backend):
        run.use_backend(backend)
        run.test("ones", lambda: {"max_err": 0.0})

    define_test("my-check", my_check, {"backend": backends},
                disabled={"backend": unavailable_backends})
"""
