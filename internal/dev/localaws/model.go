package localaws

import (
	"fmt"
	"os"
)

// ModelEnv names the variable that turns off the embedded DynamoDB's model
// of AWS's contention and limits ([Options.NoModel]): "off" turns it off,
// "" or "on" leaves it on.
const ModelEnv = "HOOKLINE_LOCAL_AWS_MODEL"

// ModelFromEnv reads [ModelEnv] and reports whether the model is off.
func ModelFromEnv() (off bool, err error) {
	switch v := os.Getenv(ModelEnv); v {
	case "", "on":
		return false, nil
	case "off":
		return true, nil
	default:
		return false, fmt.Errorf("localaws: %s=%q is not on or off", ModelEnv, v)
	}
}
