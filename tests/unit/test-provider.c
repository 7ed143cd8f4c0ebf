/* test-provider.c: where a model lives: flags, environment, config file
 * (src/model/provider.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../src/model/provider.h"
#include "harness.h"

static char dir[] = "/tmp/corral-test-provider-XXXXXX";
static char config[256];

static void write_config(const char *text)
{
        FILE *f = fopen(config, "w");
        fputs(text, f);
        fclose(f);
}

static void clear_env(void)
{
        unsetenv("OPENAI_BASE_URL");
        unsetenv("OPENAI_API_KEY");
        unsetenv("CORRAL_MODEL");
        unsetenv("CORRAL_TEST_KEY");
}

static int resolve(const char *model, const char *base_url, const char *provider, const char *cfg,
                   struct provider_choice *c, corral_error **err)
{
        struct provider_request req = { .model = model, .base_url = base_url, .provider = provider,
                                        .config_path = cfg };
        return provider_resolve(&req, c, err);
}

TEST(defaults_to_openai)
{
        clear_env();
        struct provider_choice c;
        corral_error *err = NULL;
        CHECK_INT(resolve("gpt-4o-mini", NULL, NULL, "", &c, &err), 0);
        CHECK_STR(c.base_url, "https://api.openai.com/v1");
        CHECK_STR(c.model, "gpt-4o-mini");
        CHECK(c.api_key == NULL);
        provider_choice_release(&c);
}

TEST(presets_and_prefix)
{
        clear_env();
        struct provider_choice c;
        corral_error *err = NULL;
        CHECK_INT(resolve("qwen2.5-coder:7b", NULL, "ollama", "", &c, &err), 0);
        CHECK_STR(c.base_url, "http://localhost:11434/v1");
        CHECK(c.quirks & CHAT_QUIRK_NO_TOOL_CHOICE);
        provider_choice_release(&c);
        CHECK_INT(resolve("llamacpp/any", NULL, NULL, "", &c, &err), 0);
        CHECK_STR(c.base_url, "http://localhost:8080/v1");
        CHECK_STR(c.model, "any");
        CHECK_STR(c.provider, "llamacpp");
        provider_choice_release(&c);
        /* A slash that names no provider is part of the id (vLLM's HF names). */
        CHECK_INT(resolve("meta-llama/Llama-3.1-8B", NULL, "vllm", "", &c, &err), 0);
        CHECK_STR(c.model, "meta-llama/Llama-3.1-8B");
        CHECK_STR(c.base_url, "http://localhost:8000/v1");
        provider_choice_release(&c);
        CHECK_INT(resolve("m", NULL, "nosuch", "", &c, &err), -1);
        CHECK(err && strstr(err->msg, "unknown provider 'nosuch'"));
        CHECK_INT(err->kind, CORRAL_ERR_USAGE);
        corral_error_clear(&err);
}

TEST(precedence)
{
        clear_env();
        struct provider_choice c;
        corral_error *err = NULL;
        setenv("OPENAI_BASE_URL", "http://env.example/v1", 1);
        setenv("OPENAI_API_KEY", "sk-env", 1);
        setenv("CORRAL_MODEL", "env-model", 1);
        CHECK_INT(resolve(NULL, NULL, NULL, "", &c, &err), 0);
        CHECK_STR(c.base_url, "http://env.example/v1");
        CHECK_STR(c.model, "env-model");
        CHECK_STR(c.api_key, "sk-env");
        provider_choice_release(&c);
        /* flags beat the environment; an explicit provider beats $OPENAI_BASE_URL */
        CHECK_INT(resolve("flag-model", "http://flag.example/v1", NULL, "", &c, &err), 0);
        CHECK_STR(c.base_url, "http://flag.example/v1");
        CHECK_STR(c.model, "flag-model");
        provider_choice_release(&c);
        CHECK_INT(resolve(NULL, NULL, "ollama", "", &c, &err), 0);
        CHECK_STR(c.base_url, "http://localhost:11434/v1");
        provider_choice_release(&c);
        clear_env();
        CHECK_INT(resolve(NULL, NULL, NULL, "", &c, &err), -1);
        CHECK(err && strstr(err->msg, "no model given"));
        /* words for any caller; the field for the CLI's flag */
        CHECK(err && strstr(err->msg, "--") == NULL);
        CHECK_STR(err ? err->field : NULL, "model");
        corral_error_clear(&err);
}

TEST(config_file)
{
        clear_env();
        struct provider_choice c;
        corral_error *err = NULL;
        write_config("{\"provider\": {\"ollama\": {\"baseURL\": \"http://gpu-box:11434/v1\", \"models\": "
                     "{\"qwen2.5-coder:7b\": {\"limit\": {\"context\": 65536}}}},"
                     " \"lab\": {\"options\": {\"baseURL\": \"https://lab.example/v1\", \"apiKey\": "
                     "\"{env:CORRAL_TEST_KEY}\"}, \"quirks\": [\"no_stream_usage\"]}},"
                     " \"model\": \"ollama/qwen2.5-coder:7b\"}");
        CHECK_INT(resolve(NULL, NULL, NULL, config, &c, &err), 0);
        CHECK_STR(c.base_url, "http://gpu-box:11434/v1");
        CHECK_STR(c.model, "qwen2.5-coder:7b");
        CHECK(c.quirks & CHAT_QUIRK_NO_TOOL_CHOICE); /* the preset of the same name */
        CHECK_INT(c.context_tokens, 65536);
        provider_choice_release(&c);
        /* {env:VAR}: unset is an error naming it, set is substituted */
        CHECK_INT(resolve("lab/big", NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "CORRAL_TEST_KEY"));
        corral_error_clear(&err);
        setenv("CORRAL_TEST_KEY", "sk-lab", 1);
        CHECK_INT(resolve("lab/big", NULL, NULL, config, &c, &err), 0);
        CHECK_STR(c.api_key, "sk-lab");
        CHECK_STR(c.base_url, "https://lab.example/v1");
        CHECK(c.quirks & CHAT_QUIRK_NO_STREAM_USAGE);
        provider_choice_release(&c);
        /* $OPENAI_API_KEY comes first */
        setenv("OPENAI_API_KEY", "sk-env", 1);
        CHECK_INT(resolve("lab/big", NULL, NULL, config, &c, &err), 0);
        CHECK_STR(c.api_key, "sk-env");
        provider_choice_release(&c);
        /* $OPENAI_BASE_URL beats a provider named only in the config file */
        setenv("OPENAI_BASE_URL", "http://env.example/v1", 1);
        CHECK_INT(resolve(NULL, NULL, NULL, config, &c, &err), 0);
        CHECK_STR(c.base_url, "http://env.example/v1");
        provider_choice_release(&c);
        clear_env();
}

TEST(modalities)
{
        clear_env();
        struct provider_choice c;
        corral_error *err = NULL;
        write_config("{\"provider\": {\"ollama\": {\"models\": {"
                     "\"llava\": {\"modalities\": {\"input\": [\"text\", \"image\"], \"output\": [\"text\"]}},"
                     "\"coder\": {\"modalities\": {\"input\": [\"text\"]}},"
                     "\"bad\": {\"modalities\": {\"input\": \"image\"}}, \"worse\": {\"modalities\": {\"input\": [1]}}"
                     "}}}}");
        CHECK_INT(resolve("ollama/llava", NULL, NULL, config, &c, &err), 0);
        CHECK_INT(c.images, 1);
        provider_choice_release(&c);
        CHECK_INT(resolve("ollama/coder", NULL, NULL, config, &c, &err), 0);
        CHECK_INT(c.images, -1);
        provider_choice_release(&c);
        /* Not said (and no preset says): unknown, which `corral run --images auto` takes as off. */
        CHECK_INT(resolve("ollama/other", NULL, NULL, config, &c, &err), 0);
        CHECK_INT(c.images, 0);
        provider_choice_release(&c);
        CHECK_INT(resolve("openai/gpt-4o", NULL, NULL, config, &c, &err), 0);
        CHECK_INT(c.images, 0);
        provider_choice_release(&c);
        CHECK_INT(resolve("ollama/bad", NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "modalities.input") && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        CHECK_INT(resolve("ollama/worse", NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "modalities.input"));
        corral_error_clear(&err);
        clear_env();
}

TEST(config_errors)
{
        clear_env();
        struct provider_choice c;
        corral_error *err = NULL;
        write_config("{\"model\": \"a\", \"model\": \"b\"}");
        CHECK_INT(resolve(NULL, NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "line 1") && strstr(err->msg, config));
        CHECK_INT(err->kind, CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        write_config("{\"provider\": {\"x\": {\"quirks\": [\"fast\"]}}, \"model\": \"x/m\"}");
        CHECK_INT(resolve(NULL, NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "unknown quirk"));
        corral_error_clear(&err);
        write_config("{\"provider\": {\"x\": {\"models\": {\"m\": {\"limit\": {\"context\": \"big\"}}}}}, "
                     "\"model\": \"x/m\"}");
        CHECK_INT(resolve(NULL, NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "limit.context"));
        corral_error_clear(&err);
        write_config("[1]");
        CHECK_INT(resolve("m", NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "JSON object"));
        corral_error_clear(&err);
        /* Over 1 MiB: refused whole, not read in part. */
        FILE *f = fopen(config, "w");
        fputs("{\"model\": \"", f);
        for (int i = 0; i < (1 << 20); i++)
                fputc('m', f);
        fputs("\"}", f);
        fclose(f);
        CHECK_INT(resolve(NULL, NULL, NULL, config, &c, &err), -1);
        CHECK(err && strstr(err->msg, "larger than 1024 KiB"));
        corral_error_clear(&err);
        CHECK_INT(resolve("m", NULL, NULL, "/nonexistent/corral.json", &c, &err), -1);
        CHECK(err && strstr(err->msg, "/nonexistent/corral.json"));
        corral_error_clear(&err);
        /* Typos are errors naming the nearest key, at every level. */
        static const struct {
                const char *text, *says;
        } typos[] = {
                { "{\"modle\": \"x\"}", "the top level has no key \"modle\" (did you mean \"model\"?)" },
                { "{\"provider\": {\"lab\": {\"baseUrl\": \"http://h/v1\"}}}",
                  "provider.lab has no key \"baseUrl\" (did you mean \"baseURL\"?)" },
                { "{\"provider\": {\"lab\": {\"options\": {\"apikey\": \"k\"}}}}",
                  "provider.lab.options has no key \"apikey\" (did you mean \"apiKey\"?)" },
                { "{\"provider\": {\"lab\": {\"models\": {\"m\": {\"limits\": {}}}}}}",
                  "provider.lab.models.m has no key \"limits\" (did you mean \"limit\"?)" },
                { "{\"provider\": {\"lab\": {\"models\": {\"m\": {\"limit\": {\"contxt\": 9}}}}}}",
                  "no key \"contxt\" (did you mean \"context\"?)" },
                { "{\"provider\": {\"lab\": {\"headers\": {}}}}", "no key \"headers\" (it takes \"name\"," },
        };
        for (size_t i = 0; i < ARRAY_SIZE(typos); i++) {
                write_config(typos[i].text);
                CHECK_INT(resolve("m", NULL, NULL, config, &c, &err), -1);
                CHECK(err && strstr(err->msg, typos[i].says) && err->kind == CORRAL_ERR_USAGE);
                if (err && !strstr(err->msg, typos[i].says))
                        printf("# %s\n", err->msg);
                corral_error_clear(&err);
        }
        /* the helper itself */
        static const char *const names[] = { "timeout", "memory", "model", "baseURL", NULL };
        CHECK_STR(nearest_name("timout", names), "timeout");
        CHECK_STR(nearest_name("BASEURL", names), "baseURL");
        CHECK_STR(nearest_name("memroy", names), "memory"); /* a swap is one edit */
        CHECK(nearest_name("xyz", names) == NULL);
        CHECK(nearest_name("mo", names) == NULL);           /* two edits of two letters: too far */
}

int main(void)
{
        if (mkdtemp(dir) == NULL)
                return 1;
        snprintf(config, sizeof(config), "%s/config.json", dir);
        RUN(defaults_to_openai);
        RUN(presets_and_prefix);
        RUN(precedence);
        RUN(config_file);
        RUN(config_errors);
        RUN(modalities);
        unlink(config);
        rmdir(dir);
        return DONE();
}
