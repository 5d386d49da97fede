from ninja import Router

router = Router(tags=["sessions_app"])
