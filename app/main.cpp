// strata: the command-line face of the library (docs/cli.md).
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "commands.hpp"
#include "strata/error.hpp"

namespace {

// Every failure becomes exactly one line on stderr, so scripts can show it
// as is; newlines inside a message are folded.
int report(const char* what) {
  std::string line = what;
  for (char& c : line)
    if (c == '\n') c = ' ';
  std::cerr << "strata: error: " << line << std::endl;
  return strata::cli::kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata: softmax attention on strided tensors, on every backend"};
  app.require_subcommand(0, 1);
  int status = strata::cli::kExitOk;
  strata::cli::add_info_command(app, status);
  strata::cli::add_attention_command(app, status);
  strata::cli::add_check_command(app, status);
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
  } catch (const std::bad_alloc&) {
    return report("out of memory");
  } catch (const std::exception& e) {
    return report(e.what());
  }
}
