package cli

// zkEnv is the environment variable that gives --zk its default.
const zkEnv = "LOCKBENCH_ZK"
