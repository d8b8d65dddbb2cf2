/* cmd_agents_md.c — `sopctl agents-md [--lang en|zh] [RULES.lua]`: print a section to paste
 * into a repository's AGENTS.md that tells an AI agent how to use sopctl for Python-side
 * triage (SOP §10): the non-interactive commands, how to read the table and the exit status,
 * the prohibitions, and the rules of the pack in force (from the loaded pack, so the list is
 * never stale). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sop.h"

static const char EN[] =
    "## Python-side performance triage with sopctl\n"
    "\n"
    "When a user reports a slow training job, a slow or jittery inference server, a process\n"
    "killed for memory, a stalled DataLoader or slow disk reads, diagnose with `sopctl` before\n"
    "reasoning by hand. It reads /proc, cgroups, the kernel log and every thread's Python stack\n"
    "from outside the process (the target is never stopped) and applies the triage rules.\n"
    "\n"
    "1. **Find the process**: `pgrep -af python` (the training script, the server, not a shell).\n"
    "2. **Diagnose** (non-interactive, a few seconds):\n"
    "   - `sopctl run --pid $PID --duration 5 --format json` — structured findings for you;\n"
    "   - `sopctl run --pid $PID --duration 5 --format md` — the Markdown table to show the user\n"
    "     (without `--format`, a terminal gets a summary for people instead).\n"
    "   - A process that was OOM-killed and is gone: `sopctl run --pid $DEAD_PID` still reports\n"
    "     the kernel's kill record.\n"
    "   - A distributed job (torchrun ranks, a Slurm job): `sopctl run --ranks [--slurm-job J]`\n"
    "     diagnoses every rank on this node and names the straggler; `sopctl fleet --slurm-job J`\n"
    "     does it on every node of the job; `sopctl merge` joins reports gathered otherwise.\n"
    "3. **Look closer only where a finding points**:\n"
    "   - `sopctl dump --pid $PID` (add `--native` for C frames): every thread's stack now;\n"
    "   - `sopctl record --pid $PID --duration 10 -o stacks.txt`: sampled stacks, collapsed\n"
    "     (threads asleep left out; `--idle` keeps them);\n"
    "   - `sopctl evidence --pid $PID --duration 5`: the raw numbers the rules saw (JSON).\n"
    "4. **Exit status**: 0 nothing at warn/high; 1 at least one warn/high finding; 2 usage or\n"
    "   rule-file error; 3 target not found or not readable (run as the target's user or root).\n"
    "5. **Read the output**: each finding is one row of the table\n"
    "   `symptom | evidence (numbers) | cause | fix | verify | refs`, most severe first\n"
    "   (`high`, `warn`, `info`). `cleared` lists checks that were run and passed, with their\n"
    "   numbers; `unknown` lists checks that could not run and why; `missing_evidence` says\n"
    "   which probe could not read what. Quote the evidence numbers; do not restate a finding\n"
    "   without them.\n"
    "6. **Report to the user in this table** (and nothing vaguer):\n"
    "\n"
    "   | symptom | evidence (concrete numbers) | cause | fix | verification | reference |\n"
    "   |---|---|---|---|---|---|\n"
    "\n"
    "7. **After a fix, verify** with the finding's `verify` command (usually the same\n"
    "   `sopctl run`) and compare the numbers.\n"
    "\n"
    "**Never**:\n"
    "- raise `num_workers` to a large value (for example 64) without measuring first;\n"
    "- change `multiprocessing.set_start_method` without stating its side effects (spawn and\n"
    "  forkserver start slower, re-import the main module and need picklable arguments);\n"
    "- write \"maybe\" or \"possibly\" in a diagnosis: give the evidence, or say the check was\n"
    "  unknown and why;\n"
    "- give a recommendation without an authoritative reference (PyTorch, numpy, python.org,\n"
    "  PEPs, Brendan Gregg); every finding's `refs` has them;\n"
    "- run interactive or TUI tools (`htop`, `btop`, `py-spy top`, `memray run --live`, anything\n"
    "  curses): there is no terminal. Use `sopctl`, `py-spy dump`, `memray attach` or\n"
    "  `memray run --live-remote`;\n"
    "- end or signal a process you did not start.\n"
    "\n"
    "Thresholds can be changed per run (`--set KEY=VALUE`, names in docs/rules.md) or per site\n"
    "(`--site FILE`, default /etc/sop/site.lua); `sopctl check default --doc` prints every rule\n"
    "with the evidence it reads.\n";

static const char ZH[] =
    "## 用 sopctl 做 Python 侧性能排障\n"
    "\n"
    "当用户报告训练慢、推理服务慢或抖动、进程因内存被杀、DataLoader 卡住或读盘慢时，先用\n"
    "`sopctl` 诊断，再做推理。它从进程外部读取 /proc、cgroup、内核日志和每个线程的 Python 栈\n"
    "（从不暂停目标进程），并按排障规则给出结论。\n"
    "\n"
    "1. **找到进程**：`pgrep -af python`（训练脚本或服务进程，而不是 shell）。\n"
    "2. **诊断**（非交互，几秒钟）：\n"
    "   - `sopctl run --pid $PID --duration 5 --format json --lang zh` —— 给你的结构化结论；\n"
    "   - `sopctl run --pid $PID --duration 5 --format md --lang zh` —— 给用户看的 Markdown 表格\n"
    "     （不加 `--format` 时，终端上显示的是给人看的摘要）。\n"
    "   - 已被 OOM 杀掉的进程：`sopctl run --pid $DEAD_PID` 仍会报告内核的 kill 记录。\n"
    "   - 分布式作业（torchrun 的各 rank、Slurm 作业）：`sopctl run --ranks [--slurm-job J]`\n"
    "     诊断本节点上的每个 rank 并指出拖慢者；`sopctl fleet --slurm-job J` "
    "在作业的每个节点上做同样的事；\n"
    "     其他方式收集的报告用 `sopctl merge` 合并。\n"
    "3. **只在结论指向的地方深入**：\n"
    "   - `sopctl dump --pid $PID`（加 `--native` 看 C 栈）：此刻每个线程的栈；\n"
    "   - `sopctl record --pid $PID --duration 10 -o stacks.txt`：采样栈（折叠格式；\n"
    "     空闲线程默认不计，`--idle` 保留）；\n"
    "   - `sopctl evidence --pid $PID --duration 5`：规则看到的原始数字（JSON）。\n"
    "4. **退出码**：0 没有 warn/high 结论；1 至少一个 warn/high 结论；2 用法或规则文件错误；\n"
    "   3 目标不存在或不可读（用目标进程的用户或 root 运行）。\n"
    "5. **读输出**：每条结论是表格的一行 `症状 | 证据（数字） | 根因 | 修复 | 验证 | 参考`，\n"
    "   按严重程度排序（`high`、`warn`、`info`）。`cleared` 是已检查且通过的项（带数字）；\n"
    "   `unknown` 是无法检查的项及原因；`missing_evidence` 说明哪个探针读不到什么。\n"
    "   引用证据里的数字，不要去掉数字复述结论。\n"
    "6. **用这个表格向用户报告**（不要更含糊的说法）：\n"
    "\n"
    "   | 症状 | 证据（具体数字） | 根因 | 修复 | 验证方法 | 参考 |\n"
    "   |---|---|---|---|---|---|\n"
    "\n"
    "7. **修复后验证**：运行结论里的 `verify` 命令（通常就是同一条 `sopctl run`），对比数字。\n"
    "\n"
    "**禁止**：\n"
    "- 不经测量就把 `num_workers` 调到很大（例如 64）；\n"
    "- 修改 `multiprocessing.set_start_method` 却不说明副作用（spawn/forkserver 启动更慢、\n"
    "  会重新 import 主模块、参数必须可 pickle）；\n"
    "- 在诊断里写“可能”“可能是”：要么给证据，要么说明该检查为 unknown 及原因；\n"
    "- 给出没有权威参考链接的建议（PyTorch、numpy、python.org、PEP、Brendan Gregg），\n"
    "  每条结论的 `refs` 里都有；\n"
    "- 运行交互式或 TUI 工具（`htop`、`btop`、`py-spy top`、`memray run --live`、任何 curses\n"
    "  界面）：没有终端。用 `sopctl`、`py-spy dump`、`memray attach` 或 `memray run "
    "--live-remote`；\n"
    "- 结束或发信号给不是你启动的进程。\n"
    "\n"
    "阈值可按次修改（`--set KEY=VALUE`，名称见 docs/rules.md），或按站点修改（`--site FILE`，\n"
    "默认 /etc/sop/site.lua）；`sopctl check default --doc` 列出每条规则及其读取的证据。\n";

int cmd_agents_md(int argc, char **argv)
{
    const char *lang = "en", *rules = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lang") == 0 && i + 1 < argc)
            lang = argv[++i];
        else if (strncmp(argv[i], "--lang=", 7) == 0)
            lang = argv[i] + 7;
        else if (argv[i][0] != '-' && !rules)
            rules = argv[i];
        else {
            fprintf(stderr,
                    "sopctl: agents-md: unexpected argument '%s'\n"
                    "usage: sopctl agents-md [--lang en|zh] [RULES.lua]\n",
                    argv[i]);
            return EXIT_USAGE;
        }
    }
    int zh = strcmp(lang, "zh") == 0;
    if (!zh && strcmp(lang, "en") != 0) {
        fprintf(stderr, "sopctl: --lang must be en or zh\n");
        return EXIT_USAGE;
    }
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc == 0)
        rc = rules ? sop_load_rules_file(e, rules) : sop_load_rules_default(e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", e ? sop_last_error(e) : sop_strerror(rc));
        sop_engine_free(e);
        return EXIT_USAGE;
    }
    fputs(zh ? ZH : EN, stdout);
    size_t n = sop_rule_count(e);
    /* ids only (their prefix is the SOP pack): titles are in docs/rules.md */
    printf(zh ? "\n当前规则包的 %zu 条规则：" : "\nThe %zu rules of the pack in force: ", n);
    for (size_t i = 0; i < n; i++)
        printf("%s`%s`", i ? ", " : "", sop_rule_id(e, i));
    printf("%s\n", zh ? "。" : ".");
    sop_engine_free(e);
    return EXIT_CLEAN;
}
