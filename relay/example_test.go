package relay

import "fmt"

func ExampleConfig_Migrations() {
	cfg := DefaultConfig()
	t := cfg.Migrations(0)
	fmt.Println(t.OutboxSchema+"."+t.OutboxTable, t.StatusTable, t.CheckpointTable, t.Publication)
	// Output: public.outbox outbox_delivery cdc_relay_checkpoint cdc_relay
}
