// Package plugins holds the scheduler's built-in filter and score plugins.
// Each plugin is a small stateless value that reads the framework.Cycle and
// one framework.Member; Default lists them in the order they run.
package plugins
