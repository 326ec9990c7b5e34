"""The programs of examples/python, run as a user runs them: messages.py
(a messenger's conversations, inboxes and counters) and comments.py (the
shop-comment schema of examples/comments.c, whose store either program
reads).

MRTX_EXAMPLES names the examples' folder (default: the source tree's);
MRTX_COMMENTS_C and MRTX_MESSAGES_C, when set, are the C comments and
messages programs, run on the same store as comments.py and messages.py."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.environ.get("MRTX_EXAMPLES") or os.path.join(HERE, "..", "..", "..", "examples",
                                                          "python")


class ExampleTest(unittest.TestCase):
    program = None

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="mrtx-pyex-")
        self.store = os.path.join(self._tmp.name, "store")

    def tearDown(self):
        self._tmp.cleanup()

    def run_cmd(self, *args, status=0, program=None):
        if program is None:
            cmd = [sys.executable, os.path.join(EXAMPLES, self.program)]
        else:
            cmd = [program]
        # (the examples' wall clock frozen: their newest-first orders must
        # hold through their own clocks, never through the real one)
        env = dict(os.environ, MRTX_EXAMPLE_NOW_US="1700000000000000")
        p = subprocess.run(cmd + [self.store] + list(args), capture_output=True, text=True,
                           env=env)
        self.assertEqual(p.returncode, status, "%s: %s" % (args, p.stderr))
        return p.stdout.splitlines(), p.stderr


class MessagesTest(ExampleTest):
    program = "messages.py"

    def test_conversations(self):
        self.run_cmd("send", "c1", "alice", "bob", "hi bob")
        self.run_cmd("send", "c1", "bob", "alice", "hi alice")
        self.run_cmd("send", "c2", "alice", "carol", "hey carol")
        out, _ = self.run_cmd("send", "c1", "alice", "bob", "dinner?")
        self.assertEqual(out, ["sent #3"])
        out, _ = self.run_cmd("list", "c1")
        self.assertEqual(out, ["#3 alice: dinner?", "#2 bob: hi alice", "#1 alice: hi bob"])
        out, _ = self.run_cmd("list", "c1", "1")
        self.assertEqual(out, ["#3 alice: dinner?"])
        out, _ = self.run_cmd("inbox", "alice")
        self.assertEqual(out, ["c1 #3 alice: dinner?", "c2 #1 alice: hey carol",
                               "c1 #2 bob: hi alice", "c1 #1 alice: hi bob"])
        out, _ = self.run_cmd("inbox", "carol")
        self.assertEqual(out, ["c2 #1 alice: hey carol"])
        out, _ = self.run_cmd("stats", "c1")
        self.assertEqual(out, ["count 3", "unread alice 1", "unread bob 2"])
        self.run_cmd("read", "c1", "bob")
        out, _ = self.run_cmd("stats", "c1")
        self.assertEqual(out, ["count 3", "unread alice 1", "unread bob 0"])
        out, _ = self.run_cmd("check", "c1")
        self.assertEqual(out, ["ok: 3 messages"])
        _, err = self.run_cmd("send", "c1", "alice", "carol", "x", status=1)
        self.assertIn("conversation of alice,bob", err)
        out, _ = self.run_cmd("stats", "c1")
        self.assertEqual(out[0], "count 3")  # the refused send wrote nothing

    def test_racing_senders_lose_no_increment(self):
        out, _ = self.run_cmd("race", "c", "3", "10")
        self.assertEqual(out, ["ok: 30 messages"])
        out, _ = self.run_cmd("stats", "c")
        self.assertEqual(out[0], "count 30")
        self.assertEqual(sum(int(line.split()[-1]) for line in out[1:]), 30)

    def test_usage(self):
        self.run_cmd("send", "c1", status=2)

    def test_same_store_as_the_c_program(self):
        c = os.environ.get("MRTX_MESSAGES_C")
        if not c:
            self.skipTest("MRTX_MESSAGES_C is not set")
        self.run_cmd("send", "c1", "alice", "bob", "from python")
        out, _ = self.run_cmd("send", "c1", "bob", "alice", "from c", program=c)
        self.assertEqual(out, ["sent #2"])
        for program in (None, c):
            out, _ = self.run_cmd("list", "c1", program=program)
            self.assertEqual(out, ["#2 bob: from c", "#1 alice: from python"])
            out, _ = self.run_cmd("inbox", "alice", program=program)
            self.assertEqual(out, ["c1 #2 bob: from c", "c1 #1 alice: from python"])
            out, _ = self.run_cmd("stats", "c1", program=program)
            self.assertEqual(out, ["count 2", "unread alice 1", "unread bob 1"])
            out, _ = self.run_cmd("check", "c1", program=program)
            self.assertEqual(out, ["ok: 2 messages"])


class CommentsTest(ExampleTest):
    program = "comments.py"

    def test_comments(self):
        self.run_cmd("add", "alice", "p1", "o1", "hello world")
        self.run_cmd("add", "bob", "p1", "o2", "hi")
        out, _ = self.run_cmd("add", "alice", "p2", "o3", "third")
        self.assertEqual(out, ["added comment of alice on p2 (order o3)"])
        _, err = self.run_cmd("add", "alice", "p1", "o1", "again", status=1)
        self.assertIn("already has a comment", err)
        out, _ = self.run_cmd("by-user", "alice")
        self.assertEqual(out, ["order=o3 product=p2 user=alice: third",
                               "order=o1 product=p1 user=alice: hello world"])
        out, _ = self.run_cmd("by-product", "p1", "1")
        self.assertEqual(out, ["order=o2 product=p1 user=bob: hi"])
        self.run_cmd("rank", "p1", "o2", "o1")
        top = ["1 order=o2 product=p1 user=bob: hi",
               "2 order=o1 product=p1 user=alice: hello world"]
        self.assertEqual(self.run_cmd("top", "p1")[0], top)
        _, err = self.run_cmd("rank", "p1", "o1", "o9", status=1)
        self.assertIn("the list is unchanged", err)
        self.assertEqual(self.run_cmd("top", "p1")[0], top)
        self.run_cmd("rank", "p1", "o1", "o1", status=2)

    def test_same_store_as_the_c_program(self):
        c = os.environ.get("MRTX_COMMENTS_C")
        if not c:
            self.skipTest("MRTX_COMMENTS_C is not set")
        self.run_cmd("add", "alice", "p1", "o1", "from python")
        self.run_cmd("add", "bob", "p1", "o2", "from c", program=c)
        self.run_cmd("rank", "p1", "o2", "o1", program=c)
        for program in (None, c):
            out, _ = self.run_cmd("by-product", "p1", program=program)
            self.assertEqual(sorted(out), ["order=o1 product=p1 user=alice: from python",
                                           "order=o2 product=p1 user=bob: from c"])
            out, _ = self.run_cmd("top", "p1", program=program)
            self.assertEqual(out, ["1 order=o2 product=p1 user=bob: from c",
                                   "2 order=o1 product=p1 user=alice: from python"])


if __name__ == "__main__":
    unittest.main()
