package io.github.distlock.sample;

import java.net.URI;
import java.util.List;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Positive;
import org.springframework.http.ResponseEntity;
import org.springframework.validation.annotation.Validated;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The shop's HTTP API. Errors are RFC 9457 problem details ({@link ProblemDetailsAdvice}).
 */
@RestController
@RequestMapping("/api")
@Validated
public class ShopController {

    private final OrderService orders;
    private final IdempotentOrderService idempotentOrders;
    private final UnsafeOrderService unsafeOrders;
    private final ProductService products;
    private final ProductCatalog catalog;

    ShopController(OrderService orders, IdempotentOrderService idempotentOrders, UnsafeOrderService unsafeOrders,
            ProductService products, ProductCatalog catalog) {
        this.orders = orders;
        this.idempotentOrders = idempotentOrders;
        this.unsafeOrders = unsafeOrders;
        this.products = products;
        this.catalog = catalog;
    }

    /**
     * Places an order under the locks: 201, or 409 for a duplicate, a sold-out product or a busy lock. With an
     * {@code Idempotency-Key} header, every retry with that key gets the first request's 201 and order (422 when its
     * body differs).
     */
    @PostMapping("/orders")
    public ResponseEntity<Order> placeOrder(
            @RequestHeader(name = "Idempotency-Key", required = false) String idempotencyKey,
            @Valid @RequestBody OrderRequest request) {
        Order order = (idempotencyKey == null)
                ? orders.placeOrder(request.userId(), request.productId(), request.quantity())
                : idempotentOrders.placeOrder(InvalidIdempotencyKeyException.parse(idempotencyKey), request);
        return ResponseEntity.created(URI.create("/api/orders/" + order.id())).body(order);
    }

    /** The same without any lock: shows the duplicates and overselling the locks prevent. */
    @PostMapping("/unsafe/orders")
    public ResponseEntity<Order> placeOrderUnsafe(@Valid @RequestBody OrderRequest request) throws InterruptedException {
        Order order = unsafeOrders.placeOrder(request.userId(), request.productId(), request.quantity());
        return ResponseEntity.created(URI.create("/api/orders/" + order.id())).body(order);
    }

    /** One order: where {@code Location} of a created order points; 404 when there is none. */
    @GetMapping("/orders/{id}")
    public Order order(@PathVariable long id) {
        return orders.order(id);
    }

    /** The user's orders. */
    @GetMapping("/orders")
    public List<Order> ordersOf(@RequestParam @Positive long userId) {
        return orders.ordersOf(userId);
    }

    /** Creates a product. */
    @PostMapping("/products")
    public ResponseEntity<ProductView> createProduct(@Valid @RequestBody NewProductRequest request) {
        ProductView product = products.create(request.name(), request.stock());
        return ResponseEntity.created(URI.create("/api/products/" + product.id())).body(product);
    }

    /** A product: stock, sold and the fencing token that last wrote it. */
    @GetMapping("/products/{id}")
    public ProductView product(@PathVariable long id) {
        return products.get(id);
    }

    /** What a product is, from the shared cache: loaded from the database once per missing entry, on one instance. */
    @GetMapping("/products/{id}/details")
    public ProductDetails productDetails(@PathVariable long id) {
        return catalog.details(id);
    }

    /** Adds stock, under the product lock taken through the {@link io.github.distlock.LockTemplate}. */
    @PostMapping("/products/{id}/restock")
    public ProductView restock(@PathVariable long id, @Valid @RequestBody RestockRequest request) {
        return products.restock(id, request.quantity());
    }
}
