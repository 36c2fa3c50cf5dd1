// tools/cli.hpp — what the gaspp command's parts share: command-line errors printed the way gaspp
// prints its other errors, and the `gaspp gen` subcommand (tools/gen.cpp).
#pragma once
#include <CLI/CLI.hpp>

namespace gaspp {

// Prints a command-line error as gaspp's other errors are printed (`who: message (see --help)`)
// and returns 1; after --help, prints the help on stdout and returns 0.
int cli_error(const CLI::App& app, const CLI::ParseError& e, const char* who);

// `gaspp gen -o FILE [options]`: writes a synthetic capture (tools/gen/generator.hpp); argv[1] is
// "gen". Returns the exit status.
int cmd_gen(int argc, char** argv);

}  // namespace gaspp
