// Command lambdazip packs a built function directory (dist/<name>/bootstrap)
// into dist/<name>.zip, the archive Lambda's provided.al2023 runtime takes.
package main
