"""What tests/clients/verify.py counts as a failure of a leader-move cell
and what it only counts: a group consumer's re-read of records it had
already received (at-least-once across a rebalance) is counted, a record at
two offsets, a record missing or offsets going backwards to new records
fail. Pure functions of --out rows: (partition, offset, index, ms)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verify  # noqa: E402


def rows(*triples):
    return [(p, off, i, 0.0) for p, off, i in triples]


class VerifyCheck(unittest.TestCase):
    def test_a_clean_run_is_clean(self):
        v = verify.check(rows((0, 0, 0), (1, 0, 1), (0, 1, 2)), 3)
        self.assertTrue(verify.clean(v), v)
        self.assertEqual(v["redelivered"], 0)

    def test_a_re_read_from_the_last_committed_offset_is_counted_not_failed(self):
        # The group rejoined after a failed commit and read offsets 1-2 again.
        v = verify.check(rows((0, 0, 0), (0, 1, 1), (0, 2, 2), (0, 1, 1), (0, 2, 2), (0, 3, 3)), 4)
        self.assertTrue(verify.clean(v), v)
        self.assertEqual(v["redelivered"], 2)

    def test_another_record_at_an_offset_already_delivered_fails(self):
        v = verify.check(rows((0, 0, 0), (0, 1, 1), (0, 1, 2)), 3)
        self.assertFalse(verify.clean(v))
        self.assertEqual(v["reordered"], 1)

    def test_one_record_at_two_offsets_is_a_duplicate(self):
        v = verify.check(rows((0, 0, 0), (0, 1, 0)), 1)
        self.assertEqual(v["duplicates"], 1)
        self.assertEqual(v["duplicate_sample"], [0])

    def test_new_records_out_of_offset_order_fail(self):
        v = verify.check(rows((0, 0, 0), (0, 2, 2), (0, 1, 1)), 3)
        self.assertEqual(v["reordered"], 1)

    def test_a_missing_record_is_lost(self):
        v = verify.check(rows((0, 0, 0), (0, 1, 2)), 3)
        self.assertEqual((v["lost"], v["lost_sample"]), (1, [1]))


if __name__ == "__main__":
    unittest.main()
