#!/usr/bin/env python3
"""The conformance runner's own rules: comparison, reasons, expectations, operators."""

import os
import sys
import tempfile
import types
import unittest

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import expectations  # noqa: E402
import generate  # noqa: E402
import run  # noqa: E402

RTOL, ATOL = 1e-3, 1e-7


def f32(*values):
    return np.array(values, dtype=np.float32)


class CompareTest(unittest.TestCase):
    def test_floats_within_atol_plus_rtol_times_want_match(self):
        self.assertIsNone(compare.compare_array(f32(1.0009, 0.0), f32(1.0, 0.0), RTOL, ATOL))

    def test_floats_beyond_tolerance_mismatch_with_max_error(self):
        m = compare.compare_array(f32(1.0, 2.01), f32(1.0, 2.0), RTOL, ATOL)
        self.assertEqual(m.summary, "values beyond tolerance")
        self.assertAlmostEqual(m.max_abs_err, 0.01, places=5)
        self.assertIn("1 of 2 values", m.detail)

    def test_tolerance_scales_with_want_not_got(self):
        # |0 - 1| <= 1e-7 + 1e-3 * |want|: true only when want is the large one.
        self.assertIsNotNone(compare.compare_array(f32(1000.0), f32(999.0), RTOL, 0.0))
        self.assertIsNone(compare.compare_array(f32(999.0), f32(1000.0), RTOL, 0.0))

    def test_nan_matches_nan_and_nothing_else(self):
        self.assertIsNone(compare.compare_array(f32(np.nan), f32(np.nan), RTOL, ATOL))
        m = compare.compare_array(f32(1.0), f32(np.nan), RTOL, ATOL)
        self.assertEqual(m.max_abs_err, float("inf"))

    def test_infinity_matches_the_same_infinity_only(self):
        self.assertIsNone(compare.compare_array(f32(np.inf), f32(np.inf), RTOL, ATOL))
        self.assertIsNotNone(compare.compare_array(f32(-np.inf), f32(np.inf), RTOL, ATOL))

    def test_integers_and_bools_compare_exactly(self):
        big = np.array([100000], dtype=np.int64)
        m = compare.compare_array(big + 1, big, RTOL, ATOL)  # within rtol, still wrong
        self.assertEqual(m.summary, "values differ")
        self.assertIsNone(compare.compare_array(np.array([True]), np.array([True]), RTOL, ATOL))
        self.assertIsNotNone(compare.compare_array(np.array([False]), np.array([True]),
                                                   RTOL, ATOL))

    def test_dtype_and_shape_must_equal(self):
        m = compare.compare_array(np.zeros(2, np.float64), np.zeros(2, np.float32), RTOL, ATOL)
        self.assertEqual(m.summary, "dtype float64, want float32")
        m = compare.compare_array(np.zeros((2, 1), np.float32), np.zeros(2, np.float32),
                                  RTOL, ATOL)
        self.assertEqual(m.summary, "shape [2,1], want [2]")

    def test_empty_tensors_of_equal_shape_match(self):
        self.assertIsNone(compare.compare_array(np.zeros((0, 3), np.float32),
                                                np.zeros((0, 3), np.float32), RTOL, ATOL))

    def test_sequences_and_optionals(self):
        self.assertIsNone(compare.compare_value([f32(1)], [f32(1)], RTOL, ATOL))
        self.assertEqual(compare.compare_value([f32(1), f32(3)], [f32(1), f32(2)],
                                               RTOL, ATOL).summary,
                         "element 1: values beyond tolerance")
        self.assertIsNone(compare.compare_value(None, None, RTOL, ATOL))
        self.assertIsNotNone(compare.compare_value(f32(1), None, RTOL, ATOL))


class ReasonTest(unittest.TestCase):
    def test_nanoc_unsupported_nodes_become_one_line_naming_each_op_once(self):
        err = ("nanoc: error: /b/data/cases/test_x/model.onnx: unsupported operators (3):\n"
               "  node 'Shape_0' op Shape (opset 23)\n"
               "  node 'Cast_1' op Cast (opset 23)\n"
               "  node 'Shape_2' op Shape (opset 23)\n"
               "  by op: Cast x1 Shape x2\n")
        self.assertEqual(run.one_line(err, ["/b/data/cases/test_x"]),
                         "unsupported operators (3): Cast, Shape (opset 23)")

    def test_paths_are_dropped_and_internal_errors_say_so(self):
        self.assertEqual(run.one_line("nanoc: internal error: at /tmp/abc123/x/file.cc: boom"),
                         "internal error: at file.cc: boom")

    def test_reasons_are_truncated(self):
        line = run.one_line("x" * 400)
        self.assertEqual(len(line), run.REASON_CHARS)
        self.assertTrue(line.endswith("..."))

    def test_names_for_tools(self):
        self.assertEqual(run.c_identifier("test_a-b"), "test_a_b")
        self.assertEqual(run.c_identifier("1x"), "m_1x")
        self.assertEqual(run.file_safe("a/b:c.d"), "a_b_c.d")
        self.assertEqual(run.file_safe("ü-1"), "__-1")  # one '_' a UTF-8 byte


class ExpectationsTest(unittest.TestCase):
    def test_write_then_read_round_trips_sorted(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "e.txt")
            entries = {"test_b": ("fail", "output 'y': values beyond tolerance"),
                       "test_a": ("unsupported", "unsupported operators (1): Abs (opset 13)")}
            expectations.write(path, entries, "# header\n")
            self.assertEqual(expectations.read(path), entries)
            with open(path) as f:
                self.assertEqual([ln.split()[0] for ln in f if not ln.startswith("#")],
                                 ["test_a", "test_b"])

    def test_every_kind_of_difference_is_found(self):
        expected = {"listed_passes": ("unsupported", ""), "listed_changes": ("unsupported", ""),
                    "listed_same": ("fail", "old reason"), "listed_gone": ("error", "")}
        results = {"listed_passes": ("pass", ""), "listed_changes": ("fail", "r"),
                   "listed_same": ("fail", "new reason"), "unlisted_fails": ("error", "r"),
                   "unlisted_passes": ("pass", "")}
        d = expectations.differences(expected, results)
        self.assertEqual([r[0] for r in d["regressions"]], ["unlisted_fails"])
        self.assertEqual([r[0] for r in d["newly_passing"]], ["listed_passes"])
        self.assertEqual([r[0] for r in d["changed"]], ["listed_changes"])
        self.assertEqual([r[0] for r in d["stale"]], ["listed_gone"])


class OperatorTest(unittest.TestCase):
    @staticmethod
    def case(name, *ops):
        nodes = [helper.make_node(op, ["x"], ["y"], domain=domain) for op, domain in ops]
        model = types.SimpleNamespace(graph=types.SimpleNamespace(node=nodes))
        return types.SimpleNamespace(name=name, model=model)

    def test_single_node_cases_test_their_node_and_expanded_cases_the_op_they_expand(self):
        cases = [self.case("test_selu", ("Selu", "")),
                 self.case("test_selu_expanded_ver18", ("Mul", ""), ("Exp", "")),
                 self.case("test_binarizer", ("Binarizer", "ai.onnx.ml"))]
        self.assertEqual(generate.case_operators(cases),
                         {"test_selu": "Selu", "test_selu_expanded_ver18": "Selu",
                          "test_binarizer": "ai.onnx.ml.Binarizer"})

    def test_a_multi_node_case_of_no_known_op_stops_the_generator(self):
        with self.assertRaises(SystemExit):
            generate.case_operators([self.case("test_odd", ("Mul", ""), ("Exp", ""))])


if __name__ == "__main__":
    unittest.main()
