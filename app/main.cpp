// strata: the command-line face of the library (docs/guide/cli.md).
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include "commands.hpp"
#include "strata/error.hpp"

namespace {

// Every failure becomes exactly one line on stderr, so scripts can show it
// as is; newlines inside a message are folded. Written without allocating,
// so it also works when the failure is running out of memory.
int report(const char* what) noexcept {
  std::fputs("strata: error: ", stderr);
  for (const char* c = what; *c != '\0'; ++c) std::fputc(*c == '\n' ? ' ' : *c, stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  return strata::cli::kExitError;
}

int run(int argc, char** argv) {
  CLI::App app{"strata: tensors, attention and small language models, on every backend"};
  app.require_subcommand(0, 1);
  int status = strata::cli::kExitOk;
  strata::cli::add_info_command(app, status);
  strata::cli::add_attention_command(app, status);
  strata::cli::add_check_command(app, status);
  strata::cli::add_generate_command(app, status);
  strata::cli::add_forward_command(app, status);
  strata::cli::add_train_command(app, status);
  const char* exit_codes =
      "Exit status: 0 success; 1 an error (bad file, bad shapes, unavailable backend, I/O, too "
      "large for memory); 2 a command line that makes no sense (unknown option, bad value, "
      "missing --out, an output that is another output or an input); 3 a backend disagreed "
      "with the reference (attention without files, check). Errors are one line on stderr: "
      "'strata: error: <what>'.";
  app.footer(exit_codes);
  for (CLI::App* sub : app.get_subcommands({})) sub->footer(exit_codes);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::cout << app.help();
      return strata::cli::kExitUsage;
    }
    return status;
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    report(e.what());
    return strata::cli::kExitUsage;
  } catch (const strata::cli::UsageError& e) {
    report(e.what());
    return strata::cli::kExitUsage;
  }
}

}  // namespace

// Nothing may escape main: an uncaught exception would abort with a core dump
// instead of one line on stderr. That covers failures while the command line
// is set up and while --help is printed, not only those of the commands.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    return report("out of memory");
  } catch (const std::exception& e) {
    return report(e.what());
  } catch (...) {
    return report("unknown exception");
  }
}
