"""The cruise controller: a PI law on the speed error, pure and stepped by the loop's fixed period."""
