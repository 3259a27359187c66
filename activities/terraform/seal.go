package terraform

import (
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gantry-cd/gantry/codec"
)

// Seal encrypts a saved plan (which holds sensitive values) with the current key of the codec
// keys, so it can travel between a TerraformPlan step and the TerraformApply that inherits it
// without ever being readable on the way. The key's identifier travels with it: any worker with
// the same key file opens it, also after the current key was rotated.
func Seal(keys *codec.Keys, plan []byte) ([]byte, error) {
	sealed, err := (&codec.Codec{Keys: keys}).Encode([]*commonpb.Payload{{Data: plan}})
	if err != nil {
		return nil, fmt.Errorf("seal the plan: %w", err)
	}
	return proto.Marshal(sealed[0])
}

// Open decrypts a sealed plan; a plan sealed with a key this worker lacks, or altered, is an
// error that says so.
func Open(keys *codec.Keys, sealed []byte) ([]byte, error) {
	var p commonpb.Payload
	if err := proto.Unmarshal(sealed, &p); err != nil {
		return nil, fmt.Errorf("open the plan: not a sealed plan: %w", err)
	}
	if string(p.GetMetadata()[codec.MetaKeyID]) == "" {
		return nil, fmt.Errorf("open the plan: it is not sealed")
	}
	plain, err := (&codec.Codec{Keys: keys}).Decode([]*commonpb.Payload{&p})
	if err != nil {
		return nil, fmt.Errorf("open the plan: %w", err)
	}
	return plain[0].GetData(), nil
}
