// Package errorsdoc finds, in the relay's own source, the messages it can
// stop with or that it says to the operator for them to act on, for the
// generated reference docs/reference/errors.md (its test writes the page;
// `make docs` runs it). It reads the source with go/parser and go/ast
// only, and compiles nothing.
//
// The rule: [Extract] reads the non-test Go files of the packages of the
// module that the binary links (cmd/cdc-relay and every package of the
// module it imports, directly or not; go/build selects the files for
// this platform), and takes from them:
//
//   - [Stop]: every fatal.Error{Err: E} (package internal/fatal): the
//     messages E can be. E made in place (fmt.Errorf, errors.New) or by a
//     variable or parameter of the function (below); a value of an error
//     type of the module, made in place (T{…}, &T{…}) or returned by a
//     function into a variable: the messages its Error method returns;
//     and, of the errors a function of the module returns into E, those
//     that say what to do (as [Act] says);
//   - [Check]: every preflight.Problem's Msg, in its literal or assigned
//     (p.Msg = …): check-config reports it, and run --config stops on
//     those of its tables;
//   - [Act]: every other fmt.Errorf or errors.New whose message says what
//     to do: it names a GRANT, an ALTER ROLE, a flag (--name) or a command
//     (cdc-relay name), and has at least [MinActWords] words of its own
//     (fewer, such as "--topic: …", prefix an error made elsewhere, taken
//     where it is made);
//   - [Error], [Warn]: every log line at error or warn level: a call of a
//     method (or of package slog's function) Error, Warn, ErrorContext or
//     WarnContext, or of Log with slog.LevelError or slog.LevelWarn as its
//     second argument (slog's Logger.Log, ratelog's Logger.Log): the
//     messages its message argument can be. A line whose level is known
//     only when it runs is not taken.
//
// What a message can be is read from the source as written: a string
// literal or constant (of the package, or pkg.Name of another of the
// module); fmt.Sprintf, fmt.Errorf or errors.New of such a format, each
// verb shown as its argument's text when the source holds just one, else
// as [Hole] ("\"…\"" for %q); + of such parts and others, each other a
// Hole; a variable of the function: each value it is assigned; a
// parameter: each value the package's calls of the function give it (a
// format and its arguments forwarded as fmt.Sprintf(format, args...) too);
// a call of a function of the module (f, pkg.F, or x.M when one method of
// the module only has that name) that returns a string or an error: each
// message it returns (but in an operand of +, where it is a Hole).
// A message counts when it holds a word of the source's own: "…" alone,
// the text of an error made elsewhere, does not. An error that names no
// fix and is not made fatal where it is made (an internal one: a broken
// invariant, a read that failed) is not taken; a log line that carries
// one in an attribute is taken by its message.
//
// Each text is listed once, of its weightiest kind (in the order of the
// kinds' constants), at the first package that makes it; a text that
// another shows with a Hole where it has text is left out for that one.
package errorsdoc
