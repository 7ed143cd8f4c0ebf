/* test-textproto.c: fenced code blocks of the text protocol (agent/textproto.c). */
#include "../../src/agent/agent-internal.h"
#include "harness.h"

static int find(const char *reply, struct text_block *b)
{
        return textproto_find_block(reply, b);
}

TEST(python_block)
{
        struct text_block b;
        CHECK_INT(find("Let me look.\n```python\nprint(1)\n```\nthen more", &b), 1);
        CHECK_STR(b.lang, "python");
        CHECK_STR(b.code, "print(1)\n");
        text_block_release(&b);
}

TEST(languages)
{
        static const struct {
                const char *reply, *lang;
        } cases[] = {
                { "```\nx = 1\n```", "python" },   { "```py\nx\n```", "python" }, { "```Python3\nx\n```", "python" },
                { "```bash\nls\n```", "bash" },     { "```sh\nls\n```", "bash" },  { "```shell\nls\n```", "bash" },
                { "~~~python\nx\n~~~", "python" }, { "  ```python\nx\n  ```", "python" },
                { "```python {.numberLines}\nx\n```", "python" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct text_block b;
                CHECK_INT(find(cases[i].reply, &b), 1);
                CHECK_STR(b.lang, cases[i].lang);
                text_block_release(&b);
        }
}

/* "file=PATH" in the info string: the test-driven mode writes the block there. */
TEST(file_named)
{
        struct text_block b;
        CHECK_INT(find("```python file=tests/test_a.py\nx = 1\n```", &b), 1);
        CHECK_STR(b.lang, "python");
        CHECK_STR(b.path, "tests/test_a.py");
        CHECK_STR(b.code, "x = 1\n");
        text_block_release(&b);
        CHECK_INT(find("```python  {.x} file=a.py\nx\n```", &b), 1);
        CHECK_STR(b.path, "a.py");
        text_block_release(&b);
        CHECK_INT(find("```python profile=a.py\nx\n```", &b), 1);
        CHECK(b.path == NULL);
        text_block_release(&b);
        CHECK_INT(find("```python\nx\n```", &b), 1);
        CHECK(b.path == NULL);
        text_block_release(&b);
}

TEST(no_block_is_final)
{
        struct text_block b;
        CHECK_INT(find("The answer is 42.", &b), 0);
        CHECK_INT(find("", &b), 0);
        CHECK_INT(find("inline `code` and ``two``", &b), 0);
        CHECK_INT(find("    ```python (four spaces: an indented code line, not a fence)\nx\n```", &b), 0);
}

TEST(other_languages_skipped)
{
        struct text_block b;
        CHECK_INT(find("```json\n{\"a\": 1}\n```\nThat is the result.", &b), 0);
        CHECK_INT(find("```csv\na,b\n```\n```python\nprint(2)\n```", &b), 1);
        CHECK_STR(b.code, "print(2)\n");
        text_block_release(&b);
}

TEST(closing_fence_rules)
{
        struct text_block b;
        /* A shorter fence does not close a longer one; info after a fence does not close. */
        CHECK_INT(find("````python\n```\nprint(3)\n````\n", &b), 1);
        CHECK_STR(b.code, "```\nprint(3)\n");
        text_block_release(&b);
        CHECK_INT(find("```python\na\n```not-a-close\nb\n```", &b), 1);
        CHECK_STR(b.code, "a\n```not-a-close\nb\n");
        text_block_release(&b);
        /* Unterminated: to the end (a reply cut off by a token limit). */
        CHECK_INT(find("```python\nprint(4)\nprint(5)", &b), 1);
        CHECK_STR(b.code, "print(4)\nprint(5)");
        text_block_release(&b);
        CHECK_INT(find("```python", &b), 0);
        CHECK_INT(find("```python\n  \n```\n", &b), 0);
        /* CRLF replies. */
        CHECK_INT(find("```python\r\nprint(6)\r\n```\r\n", &b), 1);
        CHECK_STR(b.code, "print(6)\r\n");
        text_block_release(&b);
}

TEST(first_block_wins)
{
        struct text_block b;
        CHECK_INT(find("```python\nfirst\n```\n```bash\nsecond\n```", &b), 1);
        CHECK_STR(b.code, "first\n");
        text_block_release(&b);
}

int main(void)
{
        RUN(python_block);
        RUN(languages);
        RUN(file_named);
        RUN(no_block_is_final);
        RUN(other_languages_skipped);
        RUN(closing_fence_rules);
        RUN(first_block_wins);
        return DONE();
}
